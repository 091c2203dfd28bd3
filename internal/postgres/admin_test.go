package postgres

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// server is the package's PostgreSQL server: these tests run the real statements.
var server *postgrestest.Server

func TestMain(m *testing.M) {
	// Flags first: m.Run exits on a bad flag, which would leave the server's directory behind.
	flag.Parse()
	s, err := postgrestest.Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// settings are the Settings of user and password on the test server.
func settings(user, password, database string) Settings {
	return Settings{Host: server.Host, Port: server.Port, User: user, Password: password, SSLMode: "disable", Database: database}
}

// operator makes a login with CREATEROLE and CREATEDB (no superuser), as a real PostgresConnection's
// would be, and returns its settings.
func operator(t *testing.T) Settings {
	t.Helper()
	name := "op_" + strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	if err := server.CreateRole(context.Background(), name, "oppw", "CREATEROLE CREATEDB"); err != nil {
		t.Fatal(err)
	}
	return settings(name, "oppw", "postgres")
}

func connect(t *testing.T, s Settings) *Admin {
	t.Helper()
	a, err := Connect(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

func writesSince(t *testing.T, off int64) []string {
	t.Helper()
	stmts, err := server.Statements(off)
	if err != nil {
		t.Fatal(err)
	}
	var w []string
	for _, st := range stmts {
		if st.IsWrite() {
			w = append(w, st.SQL)
		}
	}
	return w
}

// TestServerAcceptsVerifier proves the verifier computed in Go is one PostgreSQL accepts for the password:
// the role logs in with the password, not with another.
func TestServerAcceptsVerifier(t *testing.T) {
	ctx := context.Background()
	a := connect(t, operator(t))
	v, err := NewScramVerifier("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.conn.Exec(ctx, CreateRole("verifier_check", v)); err != nil {
		t.Fatal(err)
	}
	if err := CheckLogin(ctx, settings("verifier_check", "s3cret", "postgres")); err != nil {
		t.Errorf("login with the password: %v", err)
	}
	err = CheckLogin(ctx, settings("verifier_check", "wrong", "postgres"))
	if Classify(err) != FailureAuthentication {
		t.Errorf("login with a wrong password: %v, classified %s", err, Classify(err))
	}
}

func TestEnsureAndDrop(t *testing.T) {
	ctx := context.Background()
	op := operator(t)
	a := connect(t, op)
	owner := Owner{Kind: "PostgresDatabase", Namespace: "apps", Name: "wiki", UID: "uid-1"}
	name := Name(owner.Namespace, owner.Name)
	password, err := NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	off := server.LogSize()
	changed, err := a.Ensure(ctx, Database{Name: name, Owner: owner, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) == 0 {
		t.Fatal("Ensure of a new database changed nothing")
	}

	// The role logs in with the password, to its database only.
	login := settings(name, password, name)
	conn, err := pgx.ConnectConfig(ctx, mustConfig(t, login))
	if err != nil {
		t.Fatalf("the role cannot log in to its database: %v", err)
	}
	var user, db string
	if err := conn.QueryRow(ctx, "SELECT current_user, current_database()").Scan(&user, &db); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	if user != name || db != name {
		t.Errorf("logged in as %s to %s, want %s to %s", user, db, name, name)
	}
	// Another database's role cannot reach this database, nor this role the other's (PUBLIC's CONNECT is
	// revoked on both).
	neighbour := Owner{Kind: "PostgresDatabase", Namespace: "apps", Name: "blog", UID: "uid-n"}
	nname := Name(neighbour.Namespace, neighbour.Name)
	if _, err := a.Ensure(ctx, Database{Name: nname, Owner: neighbour, Password: "neighbourpw"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckLogin(ctx, settings(nname, "neighbourpw", name)); err == nil {
		t.Error("another database's role connects to this database")
	}
	if err := CheckLogin(ctx, settings(name, password, nname)); err == nil {
		t.Error("the role connects to another database")
	}

	// Unchanged: reads only.
	off2 := server.LogSize()
	changed, err = a.Ensure(ctx, Database{Name: name, Owner: owner, Password: password})
	if err != nil || len(changed) != 0 {
		t.Errorf("second Ensure: %v, %v; want no change", changed, err)
	}
	if w := writesSince(t, off2); len(w) != 0 {
		t.Errorf("second Ensure sent writing statements: %q", w)
	}

	// A database dropped by hand comes back; a new uid of the same object rewrites the comments.
	if _, err := a.conn.Exec(ctx, DropDatabase(name)); err != nil {
		t.Fatal(err)
	}
	owner2 := owner
	owner2.UID = "uid-2"
	if _, err := a.Ensure(ctx, Database{Name: name, Owner: owner2, Password: password}); err != nil {
		t.Fatal(err)
	}
	var comment string
	if err := a.conn.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1", name).Scan(&comment); err != nil || comment != owner2.Comment() {
		t.Errorf("role comment %q (%v), want %q", comment, err, owner2.Comment())
	}

	// Another object claiming the same name is refused and changes nothing.
	off3 := server.LogSize()
	other := Owner{Kind: "PostgresDatabase", Namespace: "other", Name: "wiki", UID: "uid-3"}
	_, err = a.Ensure(ctx, Database{Name: name, Owner: other, Password: "x", SetPassword: true})
	var claimed *ClaimedError
	if !errors.As(err, &claimed) || claimed.By.Namespace != "apps" {
		t.Errorf("Ensure for another owner: %v, want a ClaimedError naming apps/wiki", err)
	}
	if _, kept, err := a.Drop(ctx, name, other); err != nil || len(kept) == 0 {
		t.Errorf("Drop for another owner: kept %v, %v", kept, err)
	}
	if w := writesSince(t, off3); len(w) != 0 {
		t.Errorf("another owner's Ensure and Drop wrote: %q", w)
	}

	// Drop, then drop again: already gone is success.
	dropped, kept, err := a.Drop(ctx, name, owner2)
	if err != nil || len(dropped) != 2 || len(kept) != 0 {
		t.Errorf("Drop: %v, kept %v, %v", dropped, kept, err)
	}
	dropped, _, err = a.Drop(ctx, name, owner2)
	if err != nil || len(dropped) != 0 {
		t.Errorf("second Drop: %v, %v", dropped, err)
	}
	var n int
	if err := a.conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_roles WHERE rolname = $1) + (SELECT count(*) FROM pg_database WHERE datname = $1)", name).Scan(&n); err != nil || n != 0 {
		t.Errorf("role and database left after Drop: %d, %v", n, err)
	}

	// The password never reached the log, nor did the verifier's keys.
	log, err := server.ReadLog()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log[off:], password) {
		t.Error("the server log holds the password")
	}
}

func TestEnsureRefusesForeignDatabase(t *testing.T) {
	ctx := context.Background()
	a := connect(t, operator(t))
	if _, err := a.conn.Exec(ctx, "CREATE DATABASE handmade"); err != nil {
		t.Fatal(err)
	}
	owner := Owner{Kind: "PostgresDatabase", Namespace: "apps", Name: "x", UID: "u"}
	_, err := a.Ensure(ctx, Database{Name: "handmade", Owner: owner, Password: "pw"})
	var claimed *ClaimedError
	if !errors.As(err, &claimed) || claimed.What != "database" || claimed.By.Name != "" {
		t.Fatalf("Ensure over a handmade database: %v", err)
	}
	// Ensure refused before it made the role.
	var n int
	if err := a.conn.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = 'handmade'").Scan(&n); err != nil || n != 0 {
		t.Errorf("a role was made for a refused database: %d %v", n, err)
	}
}

func TestPrivilegesAndClassify(t *testing.T) {
	ctx := context.Background()
	if err := server.CreateRole(ctx, "weak", "weakpw", "CREATEDB"); err != nil {
		t.Fatal(err)
	}
	p, err := connect(t, settings("weak", "weakpw", "postgres")).Privileges(ctx)
	if err != nil || p.Sufficient() || p.Missing() != "CREATEROLE" || p.ServerVersion == "" {
		t.Errorf("weak login: %+v, %v", p, err)
	}
	p, err = connect(t, settings(server.User, server.Password, "postgres")).Privileges(ctx)
	if err != nil || !p.Sufficient() || !p.Superuser {
		t.Errorf("superuser: %+v, %v", p, err)
	}
	if got := Classify(CheckLogin(ctx, settings("weak", "nope", "postgres"))); got != FailureAuthentication {
		t.Errorf("wrong password classified %s", got)
	}
	unreachable := settings("weak", "weakpw", "postgres")
	unreachable.Port = freeClosedPort(t)
	if got := Classify(CheckLogin(ctx, unreachable)); got != FailureUnreachable {
		t.Errorf("closed port classified %s", got)
	}
	if got := Classify(CheckLogin(ctx, settings("weak", "weakpw", "no_such_db"))); got != FailureServer {
		t.Errorf("missing database classified %s", got)
	}
}

func mustConfig(t *testing.T, s Settings) *pgx.ConnConfig {
	t.Helper()
	c, err := s.ConnConfig()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// freeClosedPort is a port on 127.0.0.1 that nothing listens on: one the kernel handed out a moment ago.
func freeClosedPort(t *testing.T) int {
	t.Helper()
	ports, err := testutil.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}
