package postgrestest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TLSFiles are a test CA and a server certificate it signed for 127.0.0.1, in PEM.
type TLSFiles struct {
	CA, Cert, Key []byte
}

// NewTLSFiles makes a CA and a server certificate for the IP address 127.0.0.1 (the address tests
// connect to, so that sslmode verify-full verifies it), valid for a day.
func NewTLSFiles() (TLSFiles, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "postgrestest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return TLSFiles{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return TLSFiles{}, err
	}
	return TLSFiles{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// EnableTLS turns TLS on with f's certificate and key (ALTER SYSTEM, then a reload). The server keeps
// taking sessions without TLS too (its pg_hba.conf host lines match both), so one server answers every
// sslmode: prefer and require negotiate TLS, allow and disable do not.
func (s *Server) EnableTLS(ctx context.Context, f TLSFiles) error {
	cred, err := credential()
	if err != nil {
		return err
	}
	certFile, keyFile := filepath.Join(s.dir, "server.crt"), filepath.Join(s.dir, "server.key")
	// The server refuses a key file that others may read.
	for p, b := range map[string][]byte{certFile: f.Cert, keyFile: f.Key} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return err
		}
		if cred != nil {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	conn, err := s.Connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	for _, q := range []string{
		"ALTER SYSTEM SET ssl_cert_file = " + literal(certFile),
		"ALTER SYSTEM SET ssl_key_file = " + literal(keyFile),
		"ALTER SYSTEM SET ssl = on",
		"SELECT pg_reload_conf()",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("postgrestest: %s: %w", q, err)
		}
	}
	// The reload only signals the postmaster: wait until a new session has TLS.
	v, err := s.awaitSetting(ctx, "ssl", "on")
	switch {
	case err != nil:
		return err
	case v != "on":
		log, _ := s.ReadLog()
		return fmt.Errorf("postgrestest: ssl is still %q 10s after the reload\n%s", v, log)
	}
	return nil
}

// literal is a standard SQL string literal.
func literal(v string) string {
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}
