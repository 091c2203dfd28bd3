package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// pki is a private CA and the PEM files of what it signed, written into a test's directory.
type pki struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CAFile is the CA's certificate.
	CAFile string
}

func newCA(t *testing.T, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{dir: t.TempDir(), cert: cert, key: key}
	p.CAFile = p.write(t, name+"-ca.pem", "CERTIFICATE", der)
	return p
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue signs a leaf certificate for 127.0.0.1 (server) or a client, and returns its certificate and
// key files.
func (p *pki) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder)
}

// connectTLS connects as c and proves the connection is authorized by a request only the operator's
// permissions allow ($JS.API.INFO), or returns why it failed.
func connectTLS(url string, c auth.Client) error {
	nc, err := fleettest.ConnectAs(url, c, nats.MaxReconnects(0), nats.Timeout(5*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = nc.RequestWithContext(ctx, "$JS.API.INFO", nil)
	return err
}

// tlsRefused says whether err is a failed TLS handshake (the server's certificate refused by the client,
// or the client's by the server, which closes the connection after its side of the handshake).
func tlsRefused(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "x509") || strings.Contains(err.Error(), "tls"))
}

// TestTLS: the authorized server with a certificate of a private CA accepts a client that trusts that CA
// (auth.Client.CAFile), and the handshake fails for a client that trusts the system's roots or another
// CA. A server that verifies clients refuses a client without a certificate, or with one another CA
// signed.
func TestTLS(t *testing.T) {
	ca := newCA(t, "fleet")
	other := newCA(t, "other")
	certFile, keyFile := ca.issue(t, "nats", x509.ExtKeyUsageServerAuth)

	t.Run("server certificate", func(t *testing.T) {
		a := fleettest.StartAuthorized(t, &fleettest.ServerTLS{CertFile: certFile, KeyFile: keyFile})
		if !strings.Contains(a.ClientURL(), "://127.0.0.1:") {
			t.Fatalf("client URL %s", a.ClientURL())
		}
		if err := connectTLS(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds, CAFile: ca.CAFile}); err != nil {
			t.Errorf("control, trusting the server's CA: %v", err)
		}
		for name, c := range map[string]auth.Client{
			"the system's roots": {CredentialsFile: a.OperatorCreds},
			"another CA":         {CredentialsFile: a.OperatorCreds, CAFile: other.CAFile},
		} {
			if err := connectTLS(a.ClientURL(), c); !tlsRefused(err) {
				t.Errorf("trusting %s: %v, want a refused certificate", name, err)
			}
		}
		// TLS does not replace the credentials: without them the server refuses the client.
		if err := connectTLS(a.ClientURL(), auth.Client{CAFile: ca.CAFile}); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("trusting the CA without credentials: %v, want an authorization violation", err)
		}
	})

	t.Run("client certificates", func(t *testing.T) {
		a := fleettest.StartAuthorized(t, &fleettest.ServerTLS{CertFile: certFile, KeyFile: keyFile, ClientCA: ca.CAFile})
		clientCert, clientKey := ca.issue(t, "operator", x509.ExtKeyUsageClientAuth)
		if err := connectTLS(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds, CAFile: ca.CAFile, CertFile: clientCert, KeyFile: clientKey}); err != nil {
			t.Errorf("control, with a client certificate of the CA: %v", err)
		}
		if err := connectTLS(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds, CAFile: ca.CAFile}); !tlsRefused(err) {
			t.Errorf("without a client certificate: %v, want the handshake refused", err)
		}
		foreignCert, foreignKey := other.issue(t, "intruder", x509.ExtKeyUsageClientAuth)
		if err := connectTLS(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds, CAFile: ca.CAFile, CertFile: foreignCert, KeyFile: foreignKey}); !tlsRefused(err) {
			t.Errorf("with a client certificate of another CA: %v, want the handshake refused", err)
		}
	})

	t.Run("a certificate without its key", func(t *testing.T) {
		if _, err := (auth.Client{CertFile: certFile}).Options(); err == nil {
			t.Error("a client certificate without its key: no error")
		}
	})
}
