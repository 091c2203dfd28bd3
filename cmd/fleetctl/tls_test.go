package main

import (
	"bytes"
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

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// writePEM writes one PEM block to dir/name and returns its path.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testCA makes a CA and a certificate it signs for 127.0.0.1; it returns the CA's file and the server's
// certificate and key files.
func testCA(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fleet test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER), writePEM(t, dir, "server.pem", "CERTIFICATE", leafDER),
		writePEM(t, dir, "server-key.pem", "EC PRIVATE KEY", keyDER)
}

// TestNATSCAFile: against a TLS server whose certificate a private CA signs, fleetctl connects with
// --nats-ca-file naming that CA, and refuses the server without it.
func TestNATSCAFile(t *testing.T) {
	caFile, certFile, keyFile := testCA(t)
	a := fleettest.StartAuthorized(t, &fleettest.ServerTLS{CertFile: certFile, KeyFile: keyFile})
	url := "tls://" + a.Addr().String()
	nc, err := fleettest.ConnectAs(url, auth.Client{CredentialsFile: a.OperatorCreds, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(testCtx, js, 0); err != nil {
		t.Fatal(err)
	}
	viewer, err := a.Creds(auth.RoleViewer, "bob")
	if err != nil {
		t.Fatal(err)
	}
	states := func(extra ...string) (string, string, int) {
		var out, errb bytes.Buffer
		args := append([]string{"states", "--namespace", "shop", "--deployment", "web", "-o", "json", "--nats-url", url, "--creds", viewer, "--timeout", "5s"}, extra...)
		code := run(testCtx, args, &out, &errb)
		return out.String(), errb.String(), code
	}
	if out, stderr, code := states("--nats-ca-file", caFile); code != 0 || out != "[]\n" {
		t.Errorf("with the CA: code %d, %q, stderr %q", code, out, stderr)
	}
	if _, stderr, code := states(); code != exitError || !strings.Contains(stderr, "certificate") {
		t.Errorf("without the CA: code %d, stderr %q", code, stderr)
	}
}
