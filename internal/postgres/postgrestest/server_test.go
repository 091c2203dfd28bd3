package postgrestest

import (
	"context"
	"strings"
	"testing"
)

// TestServer starts a server, runs statements as the superuser and finds them in the log, then stops it
// and checks that nothing listens any more.
func TestServer(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	if s.Host != "127.0.0.1" || s.Port == 0 {
		t.Fatalf("server listens on %s:%d, want 127.0.0.1 and a port", s.Host, s.Port)
	}
	off := s.LogSize()
	conn, err := s.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var user string
	if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE marker (x int)"); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	if user != Superuser {
		t.Errorf("current_user = %q, want %q", user, Superuser)
	}
	stmts, err := s.Statements(off)
	if err != nil {
		t.Fatal(err)
	}
	var sawSelect, sawCreate bool
	for _, st := range stmts {
		if strings.Contains(st.SQL, "SELECT current_user") {
			sawSelect = !st.IsWrite() && st.User == Superuser && st.Database == "postgres"
		}
		if strings.Contains(st.SQL, "CREATE TABLE marker") {
			sawCreate = st.IsWrite()
		}
	}
	if !sawSelect || !sawCreate {
		t.Errorf("log statements %+v: want the SELECT (not a write, by postgres@postgres) and the CREATE (a write)", stmts)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Connect(ctx); err == nil {
		_ = c.Close(ctx)
		t.Error("the server still answers after Stop")
	}
}

// TestStartVersion starts the PostgreSQL 16 and 17 servers `make postgres-versions` installs and checks
// each is the version asked for; a missing one fails (VersionBinDir names the make target).
func TestStartVersion(t *testing.T) {
	for _, major := range []int{16, 17} {
		s, err := StartVersion(context.Background(), major)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}
}

// TestVersionBinDir: the environment variable wins and must hold initdb; unset, the newest installed
// release of that major is found, and a major nothing installed is an error naming the make target.
func TestVersionBinDir(t *testing.T) {
	t.Setenv("POSTGRES99_BIN", t.TempDir())
	if _, err := VersionBinDir(99); err == nil || !strings.Contains(err.Error(), "make postgres-versions") {
		t.Errorf("POSTGRES99_BIN without initdb: %v, want an error naming make postgres-versions", err)
	}
	t.Setenv("POSTGRES99_BIN", "")
	if _, err := VersionBinDir(99); err == nil || !strings.Contains(err.Error(), "make postgres-versions") {
		t.Errorf("no PostgreSQL 99: %v, want an error naming make postgres-versions", err)
	}
	if !releaseOf("/b/postgres-16.14.0-beta.17/bin/initdb").newer(releaseOf("/b/postgres-16.9.0-beta.17/bin/initdb")) {
		t.Error("16.14.0 is not newer than 16.9.0")
	}
}
