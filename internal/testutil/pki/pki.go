// Package pki makes the private certificate authorities tests, the demo and the local cluster need: a CA,
// server certificates for 127.0.0.1, ::1 and localhost, client certificates, as PEM or as files. Keys are ECDSA
// P-256. It is the one place such certificates are made.
package pki

import (
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
	"testing"
	"time"
)

// CA is a private certificate authority whose key is kept in memory to sign leaves.
type CA struct {
	// PEM is the CA certificate: what clients trust (a CA file, a caBundle).
	PEM []byte

	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	notAfter time.Time
}

// Pair is a certificate and its private key, in PEM.
type Pair struct {
	Cert, Key []byte
}

// NewCA makes a CA named name whose certificate, and every certificate it issues, is valid from an hour
// ago (clock skew between processes) for validity.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{PEM: encode("CERTIFICATE", der), cert: cert, key: key, notAfter: tmpl.NotAfter}, nil
}

// Server issues a serving certificate named name for 127.0.0.1, ::1 and localhost, the addresses tests
// reach their servers by (so that a client verifying the host, such as sslmode verify-full, accepts it).
func (ca *CA) Server(name string) (Pair, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:    []string{"localhost"},
	})
}

// Client issues a client certificate named name.
func (ca *CA) Client(name string) (Pair, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (ca *CA) issue(tmpl *x509.Certificate) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = ca.cert.NotBefore
	tmpl.NotAfter = ca.notAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{Cert: encode("CERTIFICATE", der), Key: encode("EC PRIVATE KEY", keyDER)}, nil
}

// WriteFile writes data to dir/name, readable by its owner only (servers refuse a key others may read),
// and returns its path.
func WriteFile(dir, name string, data []byte) (string, error) {
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, data, 0o600)
}

// TestCA is NewCA valid for an hour, failing t on error.
func TestCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// CAFile writes the CA certificate into a directory of t's as <name>-ca.pem and returns its path.
func (ca *CA) CAFile(t testing.TB) string {
	t.Helper()
	return mustWrite(t, t.TempDir(), ca.cert.Subject.CommonName+"-ca.pem", ca.PEM)
}

// ServerFiles issues a serving certificate (Server) and writes it and its key into a directory of t's.
func (ca *CA) ServerFiles(t testing.TB, name string) (certFile, keyFile string) {
	t.Helper()
	p, err := ca.Server(name)
	if err != nil {
		t.Fatal(err)
	}
	return p.files(t, name)
}

// ClientFiles issues a client certificate (Client) and writes it and its key into a directory of t's.
func (ca *CA) ClientFiles(t testing.TB, name string) (certFile, keyFile string) {
	t.Helper()
	p, err := ca.Client(name)
	if err != nil {
		t.Fatal(err)
	}
	return p.files(t, name)
}

func (p Pair) files(t testing.TB, name string) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	return mustWrite(t, dir, name+".pem", p.Cert), mustWrite(t, dir, name+"-key.pem", p.Key)
}

func mustWrite(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path, err := WriteFile(dir, name, data)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func encode(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// serial is a random 127-bit serial number: two certificates of one CA never share one.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux.
	}
	return n
}
