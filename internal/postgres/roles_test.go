package postgres

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Versions as server_version_num reports them.
const (
	v15 = 150018
	v16 = 160004
	v17 = 170002
)

func TestRoleStatementsPerVersion(t *testing.T) {
	comment := "c"
	tests := []struct {
		version   int
		grant     string
		privilege string
		create    []string
		drop      []string
	}{
		{
			version: v15, grant: `GRANT "app" TO CURRENT_USER`, privilege: "MEMBER",
			create: NewDatabase("app", "app", comment),
			drop:   []string{DropDatabase("app"), DropRole("app")},
		},
		{
			version: Version16 - 1, grant: `GRANT "app" TO CURRENT_USER`, privilege: "MEMBER",
			create: NewDatabase("app", "app", comment),
			drop:   []string{DropDatabase("app"), DropRole("app")},
		},
		{
			version: v16, grant: `GRANT "app" TO CURRENT_USER WITH INHERIT FALSE, SET TRUE`, privilege: "SET",
			create: []string{CreateDatabase("app", "app"), `SET ROLE "app"`, CommentOnDatabase("app", comment),
				RevokePublic("app"), AllowConnections("app"), "RESET ROLE"},
			drop: []string{`SET ROLE "app"`, DropDatabase("app"), "RESET ROLE", DropRole("app")},
		},
		{
			version: v17, grant: `GRANT "app" TO CURRENT_USER WITH INHERIT FALSE, SET TRUE`, privilege: "SET",
			create: []string{CreateDatabase("app", "app"), `SET ROLE "app"`, CommentOnDatabase("app", comment),
				RevokePublic("app"), AllowConnections("app"), "RESET ROLE"},
			drop: []string{`SET ROLE "app"`, DropDatabase("app"), "RESET ROLE", DropRole("app")},
		},
	}
	for _, tt := range tests {
		if got := GrantMembership(tt.version, "app"); got != tt.grant {
			t.Errorf("%d: GrantMembership = %q, want %q", tt.version, got, tt.grant)
		}
		if got := Only16(GrantMembership(tt.version, "app")); got != (tt.version >= Version16) {
			t.Errorf("%d: Only16(grant) = %v", tt.version, got)
		}
		if got := MembershipPrivilege(tt.version); got != tt.privilege {
			t.Errorf("%d: MembershipPrivilege = %q, want %q", tt.version, got, tt.privilege)
		}
		if got := NewDatabaseFor(tt.version, "app", "app", comment); !slices.Equal(got, tt.create) {
			t.Errorf("%d: NewDatabaseFor = %q, want %q", tt.version, got, tt.create)
		}
		if got := DropFor(tt.version, "app", true, true, true); !slices.Equal(got, tt.drop) {
			t.Errorf("%d: DropFor = %q, want %q", tt.version, got, tt.drop)
		}
	}
}

func TestDropForPartsAndForeignOwner(t *testing.T) {
	tests := []struct {
		name                       string
		version                    int
		dropDB, ownedByRole, dropR bool
		want                       []string
	}{
		{"nothing", v16, false, false, false, nil},
		{"role only", v16, false, false, true, []string{DropRole("x")}},
		// A database another role owns is not dropped as x: SET ROLE x would not make x its owner.
		{"database of another owner", v16, true, false, true, []string{DropDatabase("x"), DropRole("x")}},
		{"database only, 15", v15, true, true, false, []string{DropDatabase("x")}},
	}
	for _, tt := range tests {
		if got := DropFor(tt.version, "x", tt.dropDB, tt.ownedByRole, tt.dropR); !slices.Equal(got, tt.want) {
			t.Errorf("%s: DropFor = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := AsOwner(v17, "x", nil); got != nil {
		t.Errorf("AsOwner of no statements = %q, want none", got)
	}
}

func TestOnly16(t *testing.T) {
	tests := []struct {
		stmt string
		want bool
	}{
		{GrantRoleToCurrentUserSet("a"), true},
		{GrantRoleToCurrentUser("a"), false},
		{SetRole("a"), false},
		{ResetRole, false},
		{CreateDatabase("a", "a"), false},
		{"", false},
	}
	for _, tt := range tests {
		if got := Only16(tt.stmt); got != tt.want {
			t.Errorf("Only16(%q) = %v, want %v", tt.stmt, got, tt.want)
		}
	}
}

// TestVersion16Path sends every statement the PostgreSQL 16+ path sends, as a CREATEROLE login that is no
// superuser, and checks what they made: on the 16 and 17 servers as they are; on 15 the statements of
// syntax 15 lacks (Only16) are not sent as they are: the test proves 15 refuses them as a syntax error, so
// the skip hides nothing else, and sends the 15 grant in their place, which gives on 15 what the 16 grant
// gives on 16 (SET ROLE).
func TestVersion16Path(t *testing.T) { onEveryVersion(t, testVersion16Path) }

func testVersion16Path(t *testing.T, srv testServer) {
	ctx := context.Background()
	a := connect(t, srv.operator(t))
	version, err := a.ServerVersionNum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// On a 16 or later server every statement is sent as it is.
	on15 := version < Version16
	owner := Owner{Kind: "PostgresDatabase", Namespace: "apps", Name: "sixteen", UID: "uid-16"}
	name := Name(owner.Namespace, owner.Name)
	v, err := NewScramVerifier("pw16")
	if err != nil {
		t.Fatal(err)
	}
	send := func(stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if on15 && Only16(q) {
				_, err := a.conn.Exec(ctx, q)
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) || pgErr.Code != "42601" {
					t.Fatalf("%q on 15: %v, want a syntax error (42601)", q, err)
				}
				q = GrantMembership(version, name)
			}
			if _, err := a.conn.Exec(ctx, q); err != nil {
				t.Fatalf("%q: %v", summary(q), err)
			}
		}
	}
	send(CreateRole(name, v), CommentOnRole(name, owner.Comment()), GrantMembership(v16, name))
	if !on15 {
		// What roles.go relies on: 16 gave the creating login ADMIN OPTION on the role by itself, and the
		// operator's grant lets it SET ROLE without inheriting the role's privileges.
		var admin, inherits bool
		if err := a.conn.QueryRow(ctx, `SELECT coalesce(bool_or(admin_option), false) FROM pg_auth_members
			WHERE roleid = (SELECT oid FROM pg_roles WHERE rolname = $1) AND member = (SELECT oid FROM pg_roles WHERE rolname = current_user)`, name).Scan(&admin); err != nil {
			t.Fatal(err)
		}
		if err := a.conn.QueryRow(ctx, `SELECT pg_has_role(current_user, $1, 'USAGE')`, name).Scan(&inherits); err != nil {
			t.Fatal(err)
		}
		if !admin || inherits {
			t.Errorf("PostgreSQL %d: the creating login holds ADMIN OPTION %v, inherits the role's privileges %v; want true, false", srv.Major, admin, inherits)
		}
	}
	send(NewDatabaseFor(v16, name, name, owner.Comment())...)

	var user, dbOwner string
	var comment *string
	var allowConn, publicAccess bool
	if err := a.conn.QueryRow(ctx, `SELECT current_user, pg_get_userbyid(datdba), shobj_description(oid, 'pg_database'), datallowconn,
		datacl IS NULL OR EXISTS (SELECT 1 FROM unnest(datacl::text[]) AS acl WHERE acl LIKE '=%')
		FROM pg_database WHERE datname = $1`, name).Scan(&user, &dbOwner, &comment, &allowConn, &publicAccess); err != nil {
		t.Fatal(err)
	}
	if user == name {
		t.Error("the session still acts as the database's role after the 16+ path: RESET ROLE did not run")
	}
	if dbOwner != name || comment == nil || *comment != owner.Comment() || !allowConn || publicAccess {
		t.Errorf("database owner %q comment %v open %v public %v; want owner %q, the owner comment, open, no PUBLIC access", dbOwner, comment, allowConn, publicAccess, name)
	}
	if err := CheckLogin(ctx, srv.settings(name, "pw16", name)); err != nil {
		t.Errorf("the role cannot log in to its database: %v", err)
	}

	// The inspect query of 16+ asks pg_has_role for SET, which 15 does not know: not run here.
	var member bool
	err = a.conn.QueryRow(ctx, `SELECT pg_has_role(current_user, $1, $2)`, name, MembershipPrivilege(v16)).Scan(&member)
	var pgErr *pgconn.PgError
	switch {
	case on15 && (!errors.As(err, &pgErr) || pgErr.Code != "22023"):
		t.Errorf("pg_has_role(..., 'SET') on 15: %v, want unrecognized privilege type (22023)", err)
	case !on15 && (err != nil || !member):
		t.Errorf("pg_has_role(..., 'SET') on %d after the grant: %v, %v; want true", version, member, err)
	}

	send(DropFor(v16, name, true, true, true)...)
	var roles, dbs int
	if err := a.conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_roles WHERE rolname = $1), (SELECT count(*) FROM pg_database WHERE datname = $1)`, name).Scan(&roles, &dbs); err != nil {
		t.Fatal(err)
	}
	if roles != 0 || dbs != 0 {
		t.Errorf("after the 16+ drop: %d roles, %d databases named %s; want none", roles, dbs, name)
	}
}

// TestExecResetsRoleAfterFailure: a statement that fails after SET ROLE leaves the pooled session as the
// operator's login again (hostile), and a run without a failure needs no extra reset (control).
func TestExecResetsRoleAfterFailure(t *testing.T) { onEveryVersion(t, testExecResetsRoleAfterFailure) }

func testExecResetsRoleAfterFailure(t *testing.T, srv testServer) {
	ctx := context.Background()
	op := srv.operator(t)
	a := connect(t, op)
	v, err := NewScramVerifier("x")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{CreateRole("reset_check", v), GrantRoleToCurrentUser("reset_check")} {
		if _, err := a.conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	currentUser := func() string {
		t.Helper()
		var u string
		if err := a.conn.QueryRow(ctx, "SELECT current_user").Scan(&u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	var changed []string
	err = a.exec(ctx, []string{SetRole("reset_check"), AllowConnections("no_such_database_here"), ResetRole}, &changed)
	if err == nil {
		t.Fatal("a statement on a missing database succeeded")
	}
	if u := currentUser(); u != op.User {
		t.Errorf("after a failed statement as the owner the session acts as %q, want %q", u, op.User)
	}
	if _, err := a.conn.Exec(ctx, SetRole("reset_check")); err != nil {
		t.Fatal(err)
	}
	if u := currentUser(); u != "reset_check" {
		t.Fatalf("SET ROLE did not change the role: %q", u)
	}
	if _, err := a.conn.Exec(ctx, ResetRole); err != nil {
		t.Fatal(err)
	}
	changed = nil
	if err := a.exec(ctx, []string{SetRole("reset_check"), ResetRole}, &changed); err != nil {
		t.Fatal(err)
	}
	if len(changed) != 0 || currentUser() != op.User {
		t.Errorf("SET ROLE and RESET ROLE alone: changed %q, user %q; want no change, %q", changed, currentUser(), op.User)
	}
	if _, err := a.conn.Exec(ctx, DropRole("reset_check")); err != nil {
		t.Fatal(err)
	}
}

func TestServerVersionNum(t *testing.T) { onEveryVersion(t, testServerVersionNum) }

func testServerVersionNum(t *testing.T, srv testServer) {
	ctx := context.Background()
	a := connect(t, srv.operator(t))
	p, err := a.Privileges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.ServerVersionNum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v != p.VersionNum || v/10000 != srv.Major {
		t.Errorf("server_version_num %d, Privileges %d (server_version %s)", v, p.VersionNum, p.ServerVersion)
	}
}
