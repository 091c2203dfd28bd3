package postgres

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DDL takes no bind parameters, so every statement here is text: identifiers are quoted by
// pgx.Identifier.Sanitize and the only literals are verifiers and comments, quoted by literal. No
// statement carries a password.

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// literal is a standard SQL string literal (standard_conforming_strings is on in every supported
// PostgreSQL): quotes doubled; NUL, which no literal may hold, dropped.
func literal(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "'", "''") + "'"
}

// CreateRole makes role a login role whose password has the SCRAM verifier, and nothing more (no
// superuser, CREATEDB or CREATEROLE).
func CreateRole(role, verifier string) string {
	return fmt.Sprintf("CREATE ROLE %s WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %s", ident(role), literal(verifier))
}

// SetPassword gives role a new password, as a SCRAM verifier, and makes sure it can log in.
func SetPassword(role, verifier string) string {
	return fmt.Sprintf("ALTER ROLE %s WITH LOGIN PASSWORD %s", ident(role), literal(verifier))
}

// GrantRoleToCurrentUser makes the operator's login a member of role. PostgreSQL 15 lets a CREATEROLE
// role create a database owned by another role only when it is a member of it.
func GrantRoleToCurrentUser(role string) string {
	return fmt.Sprintf("GRANT %s TO CURRENT_USER", ident(role))
}

// CreateDatabase makes database db owned by owner, closed to every new session: PUBLIC holds CONNECT on
// a new database until RevokePublic runs, and CREATE DATABASE cannot share a transaction with the
// REVOKE, so the database takes no connection at all until AllowConnections opens it after the revoke.
func CreateDatabase(db, owner string) string {
	return fmt.Sprintf("CREATE DATABASE %s WITH OWNER %s ALLOW_CONNECTIONS false", ident(db), ident(owner))
}

// AllowConnections opens db to sessions again (datallowconn), the last step of making it.
func AllowConnections(db string) string {
	return fmt.Sprintf("ALTER DATABASE %s WITH ALLOW_CONNECTIONS true", ident(db))
}

// NewDatabase is the whole making of database db for owner, in the order it must run: created closed,
// commented, PUBLIC's privileges revoked, and only then opened. No role but owner (and superusers, and
// owner's members) can connect to it at any moment: before the revoke the database refuses every
// session, after it PUBLIC has no CONNECT. CREATE DATABASE cannot run in a transaction, so the
// statements are sent one by one; a procedure cut short leaves a closed database, which Ensure finishes.
func NewDatabase(db, owner, comment string) []string {
	return []string{CreateDatabase(db, owner), CommentOnDatabase(db, comment), RevokePublic(db), AllowConnections(db)}
}

// SetDatabaseOwner gives database db to owner.
func SetDatabaseOwner(db, owner string) string {
	return fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", ident(db), ident(owner))
}

// RevokePublic takes every privilege on db (CONNECT and TEMPORARY by default) from PUBLIC, so only its
// owner (and superusers) can connect to it.
func RevokePublic(db string) string {
	return fmt.Sprintf("REVOKE ALL ON DATABASE %s FROM PUBLIC", ident(db))
}

// CommentOnRole records the owner comment on role.
func CommentOnRole(role, comment string) string {
	return fmt.Sprintf("COMMENT ON ROLE %s IS %s", ident(role), literal(comment))
}

// CommentOnDatabase records the owner comment on db.
func CommentOnDatabase(db, comment string) string {
	return fmt.Sprintf("COMMENT ON DATABASE %s IS %s", ident(db), literal(comment))
}

// DropDatabase drops db, closing its sessions (PostgreSQL 13 and later); one already gone is no error.
func DropDatabase(db string) string {
	return fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", ident(db))
}

// DropRole drops role; one already gone is no error.
func DropRole(role string) string {
	return fmt.Sprintf("DROP ROLE IF EXISTS %s", ident(role))
}

// Owner is the object a role and database were made for.
type Owner struct {
	// Kind is the custom resource's kind (PostgresDatabase).
	Kind string
	// Namespace and Name identify it; a new object of the same namespace and name (after reclaimPolicy
	// Retain) takes the role and database up again.
	Namespace, Name string
	// UID is the object's uid, for people reading the comment.
	UID string
}

// ownerCommentPrefix starts every comment the operator writes.
const ownerCommentPrefix = "managed by platform-operator for "

var ownerComment = regexp.MustCompile(`^managed by platform-operator for ([A-Za-z]+) ([a-z0-9-]+)/([a-z0-9.-]+) \(uid ([^)]*)\)$`)

// Comment is the comment the operator puts on a role and database it made for o.
func (o Owner) Comment() string {
	return fmt.Sprintf("%s%s %s/%s (uid %s)", ownerCommentPrefix, o.Kind, o.Namespace, o.Name, o.UID)
}

// ParseOwner reads a comment the operator wrote; ok is false for any other comment (or none).
func ParseOwner(comment string) (o Owner, ok bool) {
	m := ownerComment.FindStringSubmatch(comment)
	if m == nil {
		return Owner{}, false
	}
	return Owner{Kind: m[1], Namespace: m[2], Name: m[3], UID: m[4]}, true
}

// SameObject says whether o and p name the same object (kind, namespace and name; not the uid).
func (o Owner) SameObject(p Owner) bool {
	return o.Kind == p.Kind && o.Namespace == p.Namespace && o.Name == p.Name
}
