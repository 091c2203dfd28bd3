package postgrestest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/platform-operator/platform-operator/internal/testutil/pki"
)

// TLSFiles are a test CA and a server certificate it signed for 127.0.0.1, in PEM.
type TLSFiles struct {
	CA, Cert, Key []byte
}

// NewTLSFiles makes a CA and a server certificate for the IP address 127.0.0.1 (the address tests
// connect to, so that sslmode verify-full verifies it), valid for a day.
func NewTLSFiles() (TLSFiles, error) {
	ca, err := pki.NewCA("postgrestest CA", 24*time.Hour)
	if err != nil {
		return TLSFiles{}, err
	}
	srv, err := ca.Server("127.0.0.1")
	if err != nil {
		return TLSFiles{}, err
	}
	return TLSFiles{CA: ca.PEM, Cert: srv.Cert, Key: srv.Key}, nil
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
