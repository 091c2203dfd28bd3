package soju

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/platform-operator/platform-operator/internal/postgres"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
)

// tlsFiles are the CA and server certificate of the PostgreSQL server TestDriverOpensRenderedConfig
// starts. The CA is the only root this package's tests trust: Go reads the system roots once per
// process, from SSL_CERT_FILE when it is set, so it is set before any test runs. A soju image trusts a
// private CA the same way, which is what sslmode verify-ca and verify-full need of it.
var tlsFiles postgrestest.TLSFiles

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	f, err := postgrestest.NewTLSFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "soju-test-ca-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, f.CA, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.Setenv("SSL_CERT_FILE", ca); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tlsFiles = f
	return m.Run()
}

// driverOpen opens connInfo with soju's driver, as soju does (database/sql, driver "postgres"), and
// says whether the session runs over TLS, as the server sees it.
func driverOpen(ctx context.Context, connInfo string) (tls bool, err error) {
	db, err := sql.Open("postgres", connInfo)
	if err != nil {
		return false, err
	}
	defer func() { _ = db.Close() }()
	err = db.QueryRowContext(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&tls)
	return tls, err
}

// dbLine is the connection string of the rendered config's db directive.
func dbLine(t *testing.T, rendered []byte) string {
	t.Helper()
	ds, err := parse(string(rendered))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Name == "db" && len(d.Params) == 2 && d.Params[0] == "postgres" {
			return d.Params[1]
		}
	}
	t.Fatalf("no db postgres directive in\n%s", rendered)
	return ""
}

// TestDriverOpensRenderedConfig renders soju's config for every sslmode an admin Secret may hold, on a
// server without TLS and then with it, and opens the config's db line with github.com/lib/pq (soju's
// driver, at soju's version) with the password in PGPASSWORD, as soju's pod has it. The hostile half: the
// line as it was rendered before (the admin Secret's prefer or allow as they are) is refused by lib/pq.
func TestDriverOpensRenderedConfig(t *testing.T) {
	ctx := context.Background()
	srv, err := postgrestest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	const role, password = "irc_driver_probe", "probe-pw-0123456789"
	if err := srv.CreateRole(ctx, role, password, ""); err != nil {
		t.Fatal(err)
	}
	// The pod's environment: PGPASSWORD from the bouncer's database Secret, no other PG variable.
	t.Setenv("PGPASSWORD", password)
	for _, k := range []string{"PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE"} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	bouncer := full()
	base := postgres.Settings{Host: srv.Host, Port: srv.Port, User: role, Password: password, Database: "postgres"}

	type tc struct {
		mode       string
		seen       postgres.Transport // what the operator's pgx session is expected to have used
		driverMode string
		tls        bool // whether soju's session is expected to run over TLS
	}
	run := func(t *testing.T, tt tc) {
		s := base
		s.SSLMode = tt.mode
		// The operator's own session, with the admin Secret's sslmode as it is.
		a, err := postgres.Connect(ctx, s)
		if err != nil {
			t.Fatalf("the operator's session: %v", err)
		}
		seen := a.Transport()
		_ = a.Close(ctx)
		if seen != tt.seen {
			t.Fatalf("the operator's session ran over %q, want %q", seen, tt.seen)
		}
		login, err := DriverLogin(s, seen)
		if err != nil {
			t.Fatal(err)
		}
		rendered, err := RenderConfig(bouncer, login)
		if err != nil {
			t.Fatal(err)
		}
		ci := dbLine(t, rendered)
		if strings.Contains(ci, password) {
			t.Fatalf("the db line carries the password: %s", ci)
		}
		if !strings.Contains(ci, "sslmode='"+tt.driverMode+"'") {
			t.Errorf("db line %s, want sslmode %q", ci, tt.driverMode)
		}
		gotTLS, err := driverOpen(ctx, ci)
		if err != nil {
			t.Fatalf("lib/pq refuses the rendered db line %s: %v", ci, err)
		}
		if gotTLS != tt.tls {
			t.Errorf("soju's session over TLS: %v, want %v", gotTLS, tt.tls)
		}
		if tt.mode == "prefer" || tt.mode == "allow" {
			// The line as the admin Secret's sslmode would have made it.
			old := s.ConnInfo()
			_, err := driverOpen(ctx, old)
			if err == nil || !strings.Contains(err.Error(), "unsupported sslmode") {
				t.Errorf("lib/pq opened the old db line %s: %v; want it refused", old, err)
			}
		}
	}

	t.Run("server without TLS", func(t *testing.T) {
		for _, tt := range []tc{
			{mode: "prefer", seen: postgres.TransportPlain, driverMode: "disable"},
			{mode: "allow", seen: postgres.TransportPlain, driverMode: "disable"},
			{mode: "disable", seen: postgres.TransportPlain, driverMode: "disable"},
		} {
			t.Run(tt.mode, func(t *testing.T) { run(t, tt) })
		}
		// Control: require, what a blind prefer-to-require mapping would give, fails on this server.
		s := base
		s.SSLMode = "require"
		if _, err := driverOpen(ctx, s.ConnInfo()); !errors.Is(err, pq.ErrSSLNotSupported) {
			t.Errorf("lib/pq with require on a server without TLS: %v, want %v", err, pq.ErrSSLNotSupported)
		}
	})

	if err := srv.EnableTLS(ctx, tlsFiles); err != nil {
		t.Fatal(err)
	}
	t.Run("server with TLS", func(t *testing.T) {
		for _, tt := range []tc{
			{mode: "prefer", seen: postgres.TransportTLS, driverMode: "require", tls: true},
			// allow tries without TLS first, and the server takes that.
			{mode: "allow", seen: postgres.TransportPlain, driverMode: "disable"},
			{mode: "disable", seen: postgres.TransportPlain, driverMode: "disable"},
			{mode: "require", seen: postgres.TransportTLS, driverMode: "require", tls: true},
			{mode: "verify-ca", seen: postgres.TransportTLS, driverMode: "verify-ca", tls: true},
			{mode: "verify-full", seen: postgres.TransportTLS, driverMode: "verify-full", tls: true},
		} {
			t.Run(tt.mode, func(t *testing.T) { run(t, tt) })
		}
	})
}
