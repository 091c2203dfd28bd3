package postgres

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// Failure classifies why talking to a server failed, for a condition's reason.
type Failure string

const (
	// FailureAuthentication is a server that refused the user or password.
	FailureAuthentication Failure = "AuthenticationFailed"
	// FailureUnreachable is a server that could not be reached: DNS, a refused or timed-out connection, TLS.
	FailureUnreachable Failure = "Unreachable"
	// FailureServer is any other error the server answered with.
	FailureServer Failure = "ServerError"
)

// Classify says what kind of failure err is.
func Classify(err error) Failure {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 28: invalid authorization specification (28000: no pg_hba.conf entry, role cannot log
		// in; 28P01: wrong password).
		if len(pgErr.Code) == 5 && pgErr.Code[:2] == "28" {
			return FailureAuthentication
		}
		return FailureServer
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	if errors.As(err, &netErr) || errors.As(err, &connectErr) || errors.Is(err, context.DeadlineExceeded) {
		return FailureUnreachable
	}
	return FailureServer
}

// Admin is one session on a server as the operator's login: it checks privileges, ensures roles and
// databases, and drops them. It is not safe for concurrent use; Close it when done.
type Admin struct {
	conn *pgx.Conn
	// release hands a pooled session back to its Pool; nil for a session of its own.
	release func(context.Context, *pgx.Conn) error
	// afterExec, when set, is called after each writing statement Ensure and Drop run: tests look at
	// the server between two statements through it.
	afterExec func(stmt string)
	// version is the server's server_version_num once read; 0 before.
	version int
}

// Transport is what a session to a server was seen to run over.
type Transport string

const (
	// TransportUnknown is no session seen: nothing is known of what the server offers.
	TransportUnknown Transport = ""
	// TransportPlain is a session without TLS.
	TransportPlain Transport = "plain"
	// TransportTLS is a session that negotiated TLS.
	TransportTLS Transport = "tls"
)

// Transport says whether the session negotiated TLS. With sslmode prefer or allow this is the server's
// answer, which the sslmode alone does not tell.
func (a *Admin) Transport() Transport {
	if a.conn == nil {
		return TransportUnknown
	}
	// pgx replaces the connection by the *tls.Conn it wraps it in once the server agreed to TLS.
	if _, ok := a.conn.PgConn().Conn().(*tls.Conn); ok {
		return TransportTLS
	}
	return TransportPlain
}

// Connect logs in with s.
func Connect(ctx context.Context, s Settings) (*Admin, error) {
	cfg, err := s.ConnConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Admin{conn: conn}, nil
}

// CheckLogin says whether s logs in, by connecting and disconnecting at once.
func CheckLogin(ctx context.Context, s Settings) error {
	a, err := Connect(ctx, s)
	if err != nil {
		return err
	}
	return a.Close(ctx)
}

// Close ends the session, or releases it to its Pool when it came from one. Only the first Close counts.
func (a *Admin) Close(ctx context.Context) error {
	if a.conn == nil {
		return nil
	}
	c := a.conn
	a.conn = nil
	if a.release != nil {
		return a.release(ctx, c)
	}
	return c.Close(ctx)
}

// Privileges are the operator login's role attributes.
type Privileges struct {
	Superuser, CreateRole, CreateDB bool
	// ServerVersion is server_version.
	ServerVersion string
	// VersionNum is server_version_num (150018 for 15.18): what decides the statements Ensure sends.
	VersionNum int
}

// Sufficient says whether the login may make roles and databases.
func (p Privileges) Sufficient() bool { return p.Superuser || (p.CreateRole && p.CreateDB) }

// Missing names the attributes the login lacks ("CREATEROLE, CREATEDB"), "" when none.
func (p Privileges) Missing() string {
	switch {
	case p.Sufficient():
		return ""
	case !p.CreateRole && !p.CreateDB:
		return "CREATEROLE, CREATEDB"
	case !p.CreateRole:
		return "CREATEROLE"
	default:
		return "CREATEDB"
	}
}

// Privileges reads the login's attributes and the server's version.
func (a *Admin) Privileges(ctx context.Context) (Privileges, error) {
	var p Privileges
	err := a.conn.QueryRow(ctx, `SELECT rolsuper, rolcreaterole, rolcreatedb, current_setting('server_version'),
		current_setting('server_version_num')::int
		FROM pg_roles WHERE rolname = current_user`).Scan(&p.Superuser, &p.CreateRole, &p.CreateDB, &p.ServerVersion, &p.VersionNum)
	if err == nil {
		a.version = p.VersionNum
	}
	return p, err
}

// ServerVersionNum reads server_version_num once per session: PostgreSQL 16 changed the rules of roles
// made by a CREATEROLE login (roles.go).
func (a *Admin) ServerVersionNum(ctx context.Context) (int, error) {
	if a.version != 0 {
		return a.version, nil
	}
	var v int
	if err := a.conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&v); err != nil {
		return 0, err
	}
	a.version = v
	return v, nil
}

// ClaimedError is a role or database name on the server that is not the owner's: another object's
// comment is on it, or none of the operator's.
type ClaimedError struct {
	// What is "role" or "database".
	What, Name string
	// By is the object that claims it; zero when the operator did not make it.
	By Owner
}

func (e *ClaimedError) Error() string {
	if e.By.Name == "" {
		return fmt.Sprintf("the name %q is taken: %s %q already exists on the server and was not made by the operator (no owner comment); it is left untouched", e.Name, e.What, e.Name)
	}
	return fmt.Sprintf("the name %q is taken: %s %q on the server belongs to %s %s/%s (first claimant wins); it is left untouched", e.Name, e.What, e.Name, e.By.Kind, e.By.Namespace, e.By.Name)
}

// Database is what Ensure makes: a login role and a database of the same name owned by it.
type Database struct {
	// Name names the role and the database.
	Name string
	// Owner is the object they are made for, recorded as their comment.
	Owner Owner
	// Password is the role's password; it reaches the server only as a SCRAM verifier.
	Password string
	// SetPassword asks Ensure to set Password on a role that exists already (a new or rotated password,
	// or one the role may not have).
	SetPassword bool
	// Verifier, when set, is Password's SCRAM verifier (NewScramVerifier), made before the session was
	// taken: its PBKDF2 then does not hold a session of the budget. Empty: Ensure makes one when needed.
	Verifier string
}

// verifier is d.Verifier, or a new verifier of d.Password.
func (d Database) verifier() (string, error) {
	if d.Verifier != "" {
		return d.Verifier, nil
	}
	return NewScramVerifier(d.Password)
}

// state is what the server holds of one Database.
type state struct {
	// superuser is the login's rolsuper.
	superuser                    bool
	roleExists, canLogin, member bool
	roleComment                  *string
	dbExists, publicHasAccess    bool
	dbOwner                      string
	dbComment                    *string
	// dbAllowConn is datallowconn: false for a database whose making was cut short before it was opened.
	dbAllowConn bool
}

func (a *Admin) inspect(ctx context.Context, name string) (state, error) {
	// One round trip: the server's version, whether the login is a superuser (what a role it creates
	// gives it), and what the server holds of the role and of the database. A create waits for it
	// before its first write, so each query more was one more round trip per create.
	// member is whether the login already has what GrantMembership gives, by the version's rules
	// (MembershipPrivilege: SET from 16 on, MEMBER before).
	var (
		st                               state
		canLogin, member, dbPublic, open *bool
		dbOwner                          *string
	)
	err := a.conn.QueryRow(ctx, `SELECT pg_get_userbyid(datdba), current_setting('server_version_num')::int,
		(SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
		r.oid IS NOT NULL, r.rolcanlogin, shobj_description(r.oid, 'pg_authid'),
		CASE WHEN r.oid IS NULL THEN NULL
			WHEN current_setting('server_version_num')::int >= $2 THEN pg_has_role(current_user, r.oid, 'SET')
			ELSE pg_has_role(current_user, r.oid, 'MEMBER') END,
		d.oid IS NOT NULL, shobj_description(d.oid, 'pg_database'),
		d.datacl IS NULL OR EXISTS (SELECT 1 FROM unnest(d.datacl::text[]) AS acl WHERE acl LIKE '=%'), d.datallowconn
		FROM (VALUES (1)) AS one LEFT JOIN pg_roles r ON r.rolname = $1 LEFT JOIN pg_database d ON d.datname = $1`,
		name, Version16).Scan(&dbOwner, &a.version, &st.superuser, &st.roleExists, &canLogin, &st.roleComment, &member,
		&st.dbExists, &st.dbComment, &dbPublic, &open)
	if err != nil {
		return st, err
	}
	deref := func(b *bool) bool { return b != nil && *b }
	st.canLogin, st.member = deref(canLogin), deref(member)
	if st.dbExists {
		st.publicHasAccess, st.dbAllowConn = deref(dbPublic), deref(open)
		if dbOwner != nil {
			st.dbOwner = *dbOwner
		}
	}
	return st, nil
}

// claim checks that what exists of d on the server is d.Owner's, and says whether the comments need
// rewriting (the same object of a new uid, after reclaimPolicy Retain).
func (st state) claim(d Database) (rewrite bool, err error) {
	check := func(what string, comment *string, ownedByRole bool) error {
		if comment == nil {
			// A database made a moment before its comment: ours when our role owns it.
			if ownedByRole {
				rewrite = true
				return nil
			}
			return &ClaimedError{What: what, Name: d.Name}
		}
		o, ok := ParseOwner(*comment)
		if !ok {
			return &ClaimedError{What: what, Name: d.Name}
		}
		if !o.SameObject(d.Owner) {
			return &ClaimedError{What: what, Name: d.Name, By: o}
		}
		if o.UID != d.Owner.UID {
			rewrite = true
		}
		return nil
	}
	if st.roleExists {
		if err := check("role", st.roleComment, false); err != nil {
			return false, err
		}
	}
	if st.dbExists {
		if err := check("database", st.dbComment, st.roleExists && st.dbOwner == d.Name); err != nil {
			return false, err
		}
	}
	return rewrite, nil
}

// Ensure makes the server hold d: the role (LOGIN, d.Password when new or asked for), the operator's
// membership in it when the operator is no superuser, the database owned by it, no PUBLIC privileges on
// the database, and the owner comments on both. A new database is made by NewDatabase: closed to every
// session until PUBLIC's privileges are revoked, so no other role connects to it in between. It sends only the statements that change something and
// returns them, so an unchanged database costs reads only. A role or database that is not d.Owner's
// gives a *ClaimedError and is left untouched.
func (a *Admin) Ensure(ctx context.Context, d Database) (changed []string, err error) {
	st, err := a.inspect(ctx, d.Name)
	if err != nil {
		return nil, err
	}
	rewrite, err := st.claim(d)
	if err != nil {
		return nil, err
	}
	comment := d.Owner.Comment()
	var stmts []string
	if !st.roleExists {
		v, err := d.verifier()
		if err != nil {
			return nil, err
		}
		// One transaction: a role is never left without the comment that makes it ours.
		if err := pgx.BeginFunc(ctx, a.conn, func(tx pgx.Tx) error {
			for _, q := range []string{CreateRole(d.Name, v), CommentOnRole(d.Name, comment)} {
				_, err := tx.Exec(ctx, q)
				instruments.PostgresStatement(q, err)
				if err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("create role %s: %w", d.Name, err)
		}
		changed = append(changed, "created role "+d.Name)
		// A superuser is a member of every role; any other login of a role it created, by the grant
		// below.
		st.member = st.superuser
	} else {
		if d.SetPassword || !st.canLogin {
			v, err := d.verifier()
			if err != nil {
				return nil, err
			}
			stmts = append(stmts, SetPassword(d.Name, v))
		}
		if rewrite {
			stmts = append(stmts, CommentOnRole(d.Name, comment))
		}
	}
	if !st.member {
		// On 16 and later a WITH INHERIT FALSE, SET TRUE grant (roles.go); the ADMIN OPTION 16 gives a
		// role's creator comes with CREATE ROLE itself.
		stmts = append(stmts, GrantMembership(a.version, d.Name))
	}
	if err := a.exec(ctx, stmts, &changed); err != nil {
		return changed, err
	}
	stmts = nil
	if !st.dbExists {
		// CREATE DATABASE cannot run in a transaction; a database left without its comment is taken up
		// by the next Ensure, since our role owns it, and one left closed is opened by it after the revoke.
		stmts = append(stmts, NewDatabaseFor(a.version, d.Name, d.Name, comment)...)
	} else {
		if st.dbOwner != d.Name {
			// Sent as the login: only the current owner (or its members) may give the database away.
			stmts = append(stmts, SetDatabaseOwner(d.Name, d.Name))
		}
		var owned []string
		if rewrite {
			owned = append(owned, CommentOnDatabase(d.Name, comment))
		}
		if st.publicHasAccess {
			owned = append(owned, RevokePublic(d.Name))
		}
		// Opened last, after the revoke above: a database whose making was cut short stays closed
		// until PUBLIC has no CONNECT.
		if !st.dbAllowConn {
			owned = append(owned, AllowConnections(d.Name))
		}
		stmts = append(stmts, AsOwner(a.version, d.Name, owned)...)
	}
	return changed, a.exec(ctx, stmts, &changed)
}

// exec runs stmts in order, recording each in changed (by its first words, never a verifier). SET ROLE
// and RESET ROLE are not changes; a failure after a SET ROLE resets the role, so the pooled session
// goes back as the operator's login.
func (a *Admin) exec(ctx context.Context, stmts []string, changed *[]string) error {
	roleSet := false
	for _, q := range stmts {
		_, err := a.conn.Exec(ctx, q)
		instruments.PostgresStatement(q, err)
		if err != nil {
			if roleSet {
				_, _ = a.conn.Exec(ctx, ResetRole)
			}
			return fmt.Errorf("%s: %w", summary(q), err)
		}
		switch {
		case strings.HasPrefix(q, "SET ROLE "):
			roleSet = true
			continue
		case q == ResetRole:
			roleSet = false
			continue
		}
		*changed = append(*changed, summary(q))
		if a.afterExec != nil {
			a.afterExec(q)
		}
	}
	return nil
}

// summary is a statement as events and errors may show it: without its PASSWORD clause. The statements
// are built here, with PASSWORD in capitals and identifiers that cannot hold a space unquoted.
func summary(q string) string {
	if i := strings.Index(q, " PASSWORD "); i >= 0 {
		return q[:i] + " PASSWORD ..."
	}
	return q
}

// Drop removes d's database (closing its sessions) and role when they are owner's; what is already gone
// is success, and what is not owner's (another object's comment, or none) is left on the server and
// reported in kept. It returns the statements it ran.
func (a *Admin) Drop(ctx context.Context, name string, owner Owner) (dropped, kept []string, err error) {
	st, err := a.inspect(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	d := Database{Name: name, Owner: owner}
	if _, cerr := st.claim(d); cerr != nil {
		// Not ours: nothing of it is dropped.
		return nil, []string{cerr.Error()}, nil
	}
	stmts := DropFor(a.version, name, st.dbExists, st.roleExists && st.dbOwner == name, st.roleExists)
	return dropped, nil, a.exec(ctx, stmts, &dropped)
}
