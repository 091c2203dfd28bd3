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
