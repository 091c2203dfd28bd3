package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

// leaf parses a pair's certificate, proving the key belongs to it.
func leaf(t *testing.T, p Pair) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(p.Cert, p.Key)
	if err != nil {
		t.Fatalf("certificate and key are not a pair: %v", err)
	}
	c, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pool(t *testing.T, ca *CA) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("the CA's PEM holds no certificate")
	}
	return p
}

// TestIssued: a server certificate verifies for 127.0.0.1, ::1 and localhost against its CA and not against
// another CA or for another host; a client certificate verifies for client use only.
func TestIssued(t *testing.T) {
	ca, other := TestCA(t, "test"), TestCA(t, "other")
	srv, err := ca.Server("srv")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Client("cli")
	if err != nil {
		t.Fatal(err)
	}
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	tests := []struct {
		name   string
		cert   *x509.Certificate
		roots  *CA
		host   string
		usages []x509.ExtKeyUsage
		ok     bool
	}{
		{"server for 127.0.0.1", leaf(t, srv), ca, "127.0.0.1", server, true},
		{"server for localhost", leaf(t, srv), ca, "localhost", server, true},
		{"server for ::1", leaf(t, srv), ca, "::1", server, true},
		{"server for another host", leaf(t, srv), ca, "example.com", server, false},
		{"server against another CA", leaf(t, srv), other, "127.0.0.1", server, false},
		{"server used as a client", leaf(t, srv), ca, "", client, false},
		{"client", leaf(t, cli), ca, "", client, true},
		{"client against another CA", leaf(t, cli), other, "", client, false},
		{"client used as a server", leaf(t, cli), ca, "", server, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cert.Verify(x509.VerifyOptions{Roots: pool(t, tt.roots), DNSName: tt.host, KeyUsages: tt.usages})
			if (err == nil) != tt.ok {
				t.Errorf("Verify: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestFiles: the files hold what the PEM methods return, and only their owner may read them.
func TestFiles(t *testing.T) {
	ca := TestCA(t, "files")
	caFile := ca.CAFile(t)
	certFile, keyFile := ca.ServerFiles(t, "srv")
	clientCert, clientKey := ca.ClientFiles(t, "cli")
	for _, f := range []string{caFile, certFile, keyFile, clientCert, clientKey} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	if b, _ := os.ReadFile(caFile); string(b) != string(ca.PEM) {
		t.Errorf("%s is not the CA's PEM", caFile)
	}
	for _, p := range [][2]string{{certFile, keyFile}, {clientCert, clientKey}} {
		if _, err := tls.LoadX509KeyPair(p[0], p[1]); err != nil {
			t.Errorf("%s and %s: %v", p[0], p[1], err)
		}
	}
	b, _ := os.ReadFile(keyFile)
	if blk, _ := pem.Decode(b); blk == nil || blk.Type != "EC PRIVATE KEY" {
		t.Errorf("%s holds no EC private key", keyFile)
	}
}
