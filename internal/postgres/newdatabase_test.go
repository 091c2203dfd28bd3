package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATEs a refused session gets.
const (
	// stateNotAccepting is "database ... is not currently accepting connections" (datallowconn false).
	stateNotAccepting = "55000"
	// stateNoConnect is "permission denied for database" (no CONNECT privilege).
	stateNoConnect = "42501"
)

// probe is what a third role saw of a database at one moment.
type probe struct {
	after string
	// state is the SQLSTATE of the third role's refused login; "" when it got in.
	state string
	// allowConn and publicConnect are datallowconn and PUBLIC's CONNECT privilege at that moment.
	allowConn, publicConnect bool
}

// look tries a login as bystander to db and reads the database's catalog row as the superuser.
func look(t *testing.T, srv testServer, bystander Settings, db, after string) probe {
	t.Helper()
	ctx := context.Background()
	p := probe{after: after}
	if err := CheckLogin(ctx, bystander); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Fatalf("after %s: the bystander's login failed without a server error: %v", after, err)
		}
		p.state = pgErr.Code
	}
	su, err := srv.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = su.Close(ctx) }()
	if err := su.QueryRow(ctx, `SELECT datallowconn, has_database_privilege('public', oid, 'CONNECT')
		FROM pg_database WHERE datname = $1`, db).Scan(&p.allowConn, &p.publicConnect); err != nil {
		t.Fatalf("after %s: %v", after, err)
	}
	return p
}

// TestNewDatabaseHasNoConnectWindow follows a new database statement by statement: a third role, with
// no privilege of its own, must be refused at every moment; before the revoke because the database takes
// no session at all, after it because PUBLIC has no CONNECT.
func TestNewDatabaseHasNoConnectWindow(t *testing.T) {
	onEveryVersion(t, testNewDatabaseHasNoConnectWindow)
}

func testNewDatabaseHasNoConnectWindow(t *testing.T, srv testServer) {
	ctx := context.Background()
	a := connect(t, srv.operator(t))
	if err := srv.CreateRole(ctx, "bystander", "bystanderpw", ""); err != nil {
		t.Fatal(err)
	}
	owner := Owner{Kind: "SojuBouncer", Namespace: "irc", Name: "window", UID: "uid-w"}
	name := Name(owner.Namespace, owner.Name)
	bystander := srv.settings("bystander", "bystanderpw", name)

	var probes []probe
	a.afterExec = func(q string) {
		if strings.HasPrefix(q, "GRANT ") {
			return // before the database exists
		}
		probes = append(probes, look(t, srv, bystander, name, summary(q)))
	}
	off := srv.LogSize()
	password := "ownerpw-window"
	if _, err := a.Ensure(ctx, Database{Name: name, Owner: owner, Password: password}); err != nil {
		t.Fatal(err)
	}
	a.afterExec = nil

	var sawClosed, sawOpen bool
	revoked := false
	for _, p := range probes {
		t.Logf("after %s: bystander %q, datallowconn %v, PUBLIC CONNECT %v", p.after, p.state, p.allowConn, p.publicConnect)
		if p.state == "" {
			t.Errorf("after %s the bystander connected to the new database", p.after)
		}
		if strings.HasPrefix(p.after, "REVOKE ") {
			revoked = true
		}
		if !revoked && p.allowConn {
			t.Errorf("after %s, before the revoke, the database accepts connections", p.after)
		}
		if p.allowConn && p.publicConnect {
			t.Errorf("after %s the database accepts connections while PUBLIC holds CONNECT", p.after)
		}
		switch {
		case !p.allowConn && p.state == stateNotAccepting:
			sawClosed = true
		case p.allowConn && p.state == stateNoConnect:
			sawOpen = true
		}
	}
	if !sawClosed || !sawOpen {
		t.Errorf("the probes saw closed %v, open and revoked %v; want both (probes %+v)", sawClosed, sawOpen, probes)
	}

	// The order on the server, as its log has it.
	var order []string
	for _, w := range srv.writesSince(t, off) {
		if strings.Contains(w, "DATABASE") {
			order = append(order, w)
		}
	}
	want := NewDatabase(name, name, owner.Comment())
	if strings.Join(order, "\n") != strings.Join(want, "\n") {
		t.Errorf("statements on the database:\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}

	// Positive control: the owner role connects once the making is done, the bystander still not.
	if err := CheckLogin(ctx, srv.settings(name, password, name)); err != nil {
		t.Errorf("the owner role cannot connect to its database: %v", err)
	}
	if p := look(t, srv, bystander, name, "Ensure"); p.state != stateNoConnect || !p.allowConn || p.publicConnect {
		t.Errorf("after Ensure: %+v, want the bystander refused for want of CONNECT on an open database", p)
	}
}

// TestConnectProbeSeesAWindow is the probe's control: a database made as it was before (open at once,
// PUBLIC's CONNECT revoked a statement later) lets the bystander in between, so the test above can fail.
func TestConnectProbeSeesAWindow(t *testing.T) { onEveryVersion(t, testConnectProbeSeesAWindow) }

func testConnectProbeSeesAWindow(t *testing.T, srv testServer) {
	ctx := context.Background()
	a := connect(t, srv.operator(t))
	if err := srv.CreateRole(ctx, "bystander_control", "bystanderpw", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.conn.Exec(ctx, `CREATE DATABASE "window_open"`); err != nil {
		t.Fatal(err)
	}
	p := look(t, srv, srv.settings("bystander_control", "bystanderpw", "window_open"), "window_open", "CREATE DATABASE without ALLOW_CONNECTIONS false")
	if p.state != "" || !p.allowConn || !p.publicConnect {
		t.Errorf("between the old CREATE DATABASE and its REVOKE: %+v, want the bystander connected", p)
	}
	if _, err := a.conn.Exec(ctx, RevokePublic("window_open")); err != nil {
		t.Fatal(err)
	}
	if p := look(t, srv, srv.settings("bystander_control", "bystanderpw", "window_open"), "window_open", "REVOKE"); p.state != stateNoConnect {
		t.Errorf("after the revoke: %+v, want the bystander refused", p)
	}
}

// TestEnsureFinishesAClosedDatabase is a making cut short after CREATE DATABASE: the next Ensure
// comments, revokes and only then opens the database.
func TestEnsureFinishesAClosedDatabase(t *testing.T) {
	onEveryVersion(t, testEnsureFinishesAClosedDatabase)
}

func testEnsureFinishesAClosedDatabase(t *testing.T, srv testServer) {
	ctx := context.Background()
	a := connect(t, srv.operator(t))
	owner := Owner{Kind: "PostgresDatabase", Namespace: "apps", Name: "cut", UID: "uid-c"}
	name := Name(owner.Namespace, owner.Name)
	password := "ownerpw-cut"
	// The role, as the first Ensure makes it, and the database's first statement only.
	v, err := NewScramVerifier(password)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{CreateRole(name, v), CommentOnRole(name, owner.Comment()), GrantMembership(srv.Major*10000, name), NewDatabase(name, name, owner.Comment())[0]} {
		if _, err := a.conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", summary(q), err)
		}
	}
	if err := CheckLogin(ctx, srv.settings(name, password, name)); err == nil {
		t.Fatal("the owner connects to a database made closed")
	}

	off := srv.LogSize()
	if _, err := a.Ensure(ctx, Database{Name: name, Owner: owner, Password: password}); err != nil {
		t.Fatal(err)
	}
	// The role's comment is rewritten with the database's (claim's rewrite); the database's statements
	// are what matters here.
	var got []string
	for _, w := range srv.writesSince(t, off) {
		if strings.Contains(w, " DATABASE ") {
			got = append(got, w)
		}
	}
	want := []string{CommentOnDatabase(name, owner.Comment()), RevokePublic(name), AllowConnections(name)}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Ensure of a closed database wrote:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := CheckLogin(ctx, srv.settings(name, password, name)); err != nil {
		t.Errorf("the owner cannot connect after Ensure: %v", err)
	}
}
