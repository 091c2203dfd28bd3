package postgrestest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestActivity counts a role's logins and statements from the log, the superuser's sessions left out,
// and each line once across successive calls.
func TestActivity(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	if err := s.LogConnections(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRole(ctx, "counted", "counted-pw", "CREATEDB"); err != nil {
		t.Fatal(err)
	}
	off := s.LogSize()
	session := func(statements ...string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, s.ConnString("counted", "counted-pw", "postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(ctx) }()
		for _, q := range statements {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	session("SELECT 1", "CREATE DATABASE counted_db", "SELECT datname FROM pg_database")
	super, err := s.Connect(ctx) // left out: the superuser's
	if err != nil {
		t.Fatal(err)
	}
	if _, err := super.Exec(ctx, "CREATE TABLE not_counted (x int)"); err != nil {
		t.Fatal(err)
	}
	_ = super.Close(ctx)

	got, next, err := s.Activity(off, Superuser)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Activity{Logins: 1, Statements: 3, Writes: 1}); got != want {
		t.Errorf("Activity = %+v, want %+v", got, want)
	}
	all, _, err := s.Activity(off, "")
	if err != nil {
		t.Fatal(err)
	}
	if all.Logins != 2 || all.Statements != 4 || all.Writes != 2 {
		t.Errorf("Activity without exception = %+v, want the superuser's login and CREATE TABLE too", all)
	}

	session("SELECT 2")
	again, _, err := s.Activity(next, Superuser)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Activity{Logins: 1, Statements: 1}); again != want {
		t.Errorf("Activity from the offset returned = %+v, want only the second session's %+v", again, want)
	}
}
