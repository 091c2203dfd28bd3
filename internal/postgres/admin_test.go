package postgres

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// server is the package's PostgreSQL 15 server (Debian's), where the tests of one version run; servers
// are every version the operator's statements are checked on, 15 first. Each starts once for the package.
var (
	server  *postgrestest.Server
	servers []testServer
)

// testServer is one of the package's servers and its major version.
type testServer struct {
	*postgrestest.Server
	Major int
}

// onEveryVersion runs test once per server, as subtests pg15, pg16 and pg17: what the operator sends differs
// by version (roles.go), so every test of the role path runs on each.
func onEveryVersion(t *testing.T, test func(t *testing.T, srv testServer)) {
	t.Helper()
	for _, srv := range servers {
		t.Run(fmt.Sprintf("pg%d", srv.Major), func(t *testing.T) { test(t, srv) })
	}
}

// majors are the versions besides Debian's 15 the tests start (make postgres-versions installs them).
var majors = []int{16, 17}

func TestMain(m *testing.M) {
	// Flags first: m.Run exits on a bad flag, which would leave the servers' directories behind.
	flag.Parse()
	started := make([]testServer, 1+len(majors))
	errs := make([]error, len(started))
	var wg sync.WaitGroup
	for i := range started {
		wg.Go(func() {
			ctx := context.Background()
			var s *postgrestest.Server
			var err error
			if i == 0 {
				s, err = postgrestest.Start(ctx)
			} else {
				s, err = postgrestest.StartVersion(ctx, majors[i-1])
			}
			if err == nil {
				var num int
				num, err = versionNum(ctx, s)
				started[i] = testServer{Server: s, Major: num / 10000}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	stop := func() int {
		code := 0
		for _, s := range started {
			if s.Server != nil {
				if err := s.Stop(); err != nil {
					fmt.Fprintln(os.Stderr, err)
					code = 1
				}
			}
		}
		return code
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
	server, servers = started[0].Server, started
	code := m.Run()
	if stop() != 0 {
		code = 1
	}
	os.Exit(code)
}

// versionNum is server_version_num of s.
func versionNum(ctx context.Context, s *postgrestest.Server) (int, error) {
	conn, err := s.Connect(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(ctx) }()
	var num int
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num)
	return num, err
}

// settings are the Settings of user and password on the 15 server.
func settings(user, password, database string) Settings {
	return servers[0].settings(user, password, database)
}

// settings are the Settings of user and password on srv.
func (srv testServer) settings(user, password, database string) Settings {
	return Settings{Host: srv.Host, Port: srv.Port, User: user, Password: password, SSLMode: "disable", Database: database}
}

// operator makes a login with CREATEROLE and CREATEDB (no superuser) on the 15 server.
func operator(t *testing.T) Settings { t.Helper(); return servers[0].operator(t) }

// operator makes a login with CREATEROLE and CREATEDB (no superuser), as a real PostgresConnection's
// would be, and returns its settings.
func (srv testServer) operator(t *testing.T) Settings {
	t.Helper()
	name := "op_" + strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	if err := srv.CreateRole(context.Background(), name, "oppw", "CREATEROLE CREATEDB"); err != nil {
		t.Fatal(err)
	}
	return srv.settings(name, "oppw", "postgres")
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

// writesSince are the writing statements srv logged after off.
func (srv testServer) writesSince(t *testing.T, off int64) []string {
	t.Helper()
	stmts, err := srv.Statements(off)
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

func TestEnsureAndDrop(t *testing.T) { onEveryVersion(t, testEnsureAndDrop) }

func testEnsureAndDrop(t *testing.T, srv testServer) {
	ctx := context.Background()
	op := srv.operator(t)
	a := connect(t, op)
	owner := Owner{Kind: "PostgresDatabase", Namespace: "apps", Name: "wiki", UID: "uid-1"}
	name := Name(owner.Namespace, owner.Name)
	password, err := NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	off := srv.LogSize()
	changed, err := a.Ensure(ctx, Database{Name: name, Owner: owner, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) == 0 {
		t.Fatal("Ensure of a new database changed nothing")
	}
	// The version's own path ran: on 16 and later the grant without INHERIT and the owner's statements
	// between SET ROLE and RESET ROLE (roles.go); on 15 the plain grant and no SET ROLE.
	var made []string
	stmts, err := srv.Statements(off)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stmts {
		made = append(made, st.SQL)
	}
	grant, setRole := GrantMembership(srv.Major*10000, name), SetRole(name)
	if !slices.Contains(made, grant) || slices.Contains(made, setRole) != (srv.Major >= 16) {
		t.Errorf("PostgreSQL %d: Ensure wrote %q; want %q, and SET ROLE only on 16 and later", srv.Major, made, grant)
	}

	// The role logs in with the password, to its database only.
	login := srv.settings(name, password, name)
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
	if err := CheckLogin(ctx, srv.settings(nname, "neighbourpw", name)); err == nil {
		t.Error("another database's role connects to this database")
	}
	if err := CheckLogin(ctx, srv.settings(name, password, nname)); err == nil {
		t.Error("the role connects to another database")
	}

	// Unchanged: reads only.
	off2 := srv.LogSize()
	changed, err = a.Ensure(ctx, Database{Name: name, Owner: owner, Password: password})
	if err != nil || len(changed) != 0 {
		t.Errorf("second Ensure: %v, %v; want no change", changed, err)
	}
	if w := srv.writesSince(t, off2); len(w) != 0 {
		t.Errorf("second Ensure sent writing statements: %q", w)
	}

	// A database dropped by hand (by the superuser: on 16 and later the operator's login is the owner's
	// member without INHERIT, not its owner) comes back; a new uid of the same object rewrites the comments.
	su, err := srv.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = su.Exec(ctx, DropDatabase(name))
	_ = su.Close(ctx)
	if err != nil {
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
	off3 := srv.LogSize()
	other := Owner{Kind: "PostgresDatabase", Namespace: "other", Name: "wiki", UID: "uid-3"}
	_, err = a.Ensure(ctx, Database{Name: name, Owner: other, Password: "x", SetPassword: true})
	var claimed *ClaimedError
	if !errors.As(err, &claimed) || claimed.By.Namespace != "apps" {
		t.Errorf("Ensure for another owner: %v, want a ClaimedError naming apps/wiki", err)
	}
	if _, kept, err := a.Drop(ctx, name, other); err != nil || len(kept) == 0 {
		t.Errorf("Drop for another owner: kept %v, %v", kept, err)
	}
	if w := srv.writesSince(t, off3); len(w) != 0 {
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
	log, err := srv.ReadLog()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log[off:], password) {
		t.Error("the server log holds the password")
	}
}

func TestEnsureRefusesForeignDatabase(t *testing.T) {
	onEveryVersion(t, testEnsureRefusesForeignDatabase)
}

func testEnsureRefusesForeignDatabase(t *testing.T, srv testServer) {
	ctx := context.Background()
	a := connect(t, srv.operator(t))
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

func TestPrivilegesAndClassify(t *testing.T) { onEveryVersion(t, testPrivilegesAndClassify) }

func testPrivilegesAndClassify(t *testing.T, srv testServer) {
	ctx := context.Background()
	if err := srv.CreateRole(ctx, "weak", "weakpw", "CREATEDB"); err != nil {
		t.Fatal(err)
	}
	p, err := connect(t, srv.settings("weak", "weakpw", "postgres")).Privileges(ctx)
	if err != nil || p.Sufficient() || p.Missing() != "CREATEROLE" || p.ServerVersion == "" {
		t.Errorf("weak login: %+v, %v", p, err)
	}
	p, err = connect(t, srv.settings(srv.User, srv.Password, "postgres")).Privileges(ctx)
	if err != nil || !p.Sufficient() || !p.Superuser {
		t.Errorf("superuser: %+v, %v", p, err)
	}
	if got := Classify(CheckLogin(ctx, srv.settings("weak", "nope", "postgres"))); got != FailureAuthentication {
		t.Errorf("wrong password classified %s", got)
	}
	unreachable := srv.settings("weak", "weakpw", "postgres")
	unreachable.Port = freeClosedPort(t)
	if got := Classify(CheckLogin(ctx, unreachable)); got != FailureUnreachable {
		t.Errorf("closed port classified %s", got)
	}
	if got := Classify(CheckLogin(ctx, srv.settings("weak", "weakpw", "no_such_db"))); got != FailureServer {
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
