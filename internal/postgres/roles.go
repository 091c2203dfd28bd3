package postgres

import (
	"fmt"
	"strings"
)

// PostgreSQL 16 changed what a CREATEROLE role (no superuser) may do with the roles it makes:
//   - it administers only roles it holds ADMIN OPTION on (ALTER ROLE ... PASSWORD, COMMENT ON ROLE, DROP
//     ROLE). PostgreSQL 16 grants the creating role ADMIN OPTION on every role it creates (with INHERIT
//     and SET false, as createrole_self_grant is empty by default), so roles the operator makes on 16 are
//     its to administer without a statement of ours;
//   - CREATE DATABASE ... OWNER r needs the creator to be able to SET ROLE r, which the automatic grant
//     does not give: the operator grants itself r WITH INHERIT FALSE, SET TRUE. INHERIT stays false, so
//     the operator's login never holds a tenant role's privileges without asking for them;
//   - being the owner's member without INHERIT does not make the operator the owner: the statements that
//     only an owner may send (COMMENT ON DATABASE, REVOKE, ALTER DATABASE, DROP DATABASE) run between
//     SET ROLE r and RESET ROLE.
// On 15 a CREATEROLE role administers every role that is no superuser, and a plain GRANT r TO
// CURRENT_USER (which inherits) is all CREATE DATABASE ... OWNER r and the owner's statements need.
// The functions here return the statements for one server version; they send nothing.

// Version16 is server_version_num of PostgreSQL 16.0, the first release with the rules above.
const Version16 = 160000

// GrantRoleToCurrentUserSet is GrantRoleToCurrentUser for PostgreSQL 16 and later: the operator's
// login may SET ROLE role (what CREATE DATABASE ... OWNER role needs) but does not inherit its
// privileges. The WITH INHERIT ..., SET ... clause is syntax 15 lacks.
func GrantRoleToCurrentUserSet(role string) string {
	return fmt.Sprintf("GRANT %s TO CURRENT_USER WITH INHERIT FALSE, SET TRUE", ident(role))
}

// GrantMembership is the statement that lets the operator's login create a database owned by role, and
// act as its owner, on a server of version (server_version_num).
func GrantMembership(version int, role string) string {
	if version >= Version16 {
		return GrantRoleToCurrentUserSet(role)
	}
	return GrantRoleToCurrentUser(role)
}

// MembershipPrivilege is the pg_has_role privilege that says whether the operator's login already has
// what GrantMembership gives: MEMBER on 15 (membership inherits there), SET on 16 and later (an ADMIN
// OPTION alone, which 16 grants a role's creator, does not let it SET ROLE; 'SET' is unknown to 15).
func MembershipPrivilege(version int) string {
	if version >= Version16 {
		return "SET"
	}
	return "MEMBER"
}

// SetRole makes the session act as role until RESET ROLE.
func SetRole(role string) string { return "SET ROLE " + ident(role) }

// ResetRole makes the session act as its login again.
const ResetRole = "RESET ROLE"

// AsOwner wraps statements only the owner of a database may send: on 16 and later they run between
// SET ROLE owner and RESET ROLE (the operator is owner's member without INHERIT); on 15 they run as
// they are (the operator inherits owner's privileges). No statements: none.
func AsOwner(version int, owner string, stmts []string) []string {
	if version < Version16 || len(stmts) == 0 {
		return stmts
	}
	out := make([]string, 0, len(stmts)+2)
	out = append(out, SetRole(owner))
	out = append(out, stmts...)
	return append(out, ResetRole)
}

// NewDatabaseFor is NewDatabase for a server of version: on 16 and later the statements after CREATE
// DATABASE (which the operator sends as itself, holding SET on owner) run as owner.
func NewDatabaseFor(version int, db, owner, comment string) []string {
	all := NewDatabase(db, owner, comment)
	return append([]string{all[0]}, AsOwner(version, owner, all[1:])...)
}

// DropFor is the dropping of database db owned by role (when ownedByRole) and of role, in order, on a
// server of version: on 16 and later DROP DATABASE runs as its owner. A database another role owns is
// dropped as the operator's login (its privileges decide). dropDB and dropRole say what exists.
func DropFor(version int, name string, dropDB, ownedByRole, dropRole bool) []string {
	var stmts []string
	if dropDB {
		drop := []string{DropDatabase(name)}
		if ownedByRole {
			drop = AsOwner(version, name, drop)
		}
		stmts = append(stmts, drop...)
	}
	if dropRole {
		stmts = append(stmts, DropRole(name))
	}
	return stmts
}

// Only16 says whether stmt is syntax PostgreSQL 15 lacks (the GRANT ... WITH INHERIT/SET options of
// GrantRoleToCurrentUserSet): the statements a test here, on 15, cannot send.
func Only16(stmt string) bool {
	return strings.HasPrefix(stmt, "GRANT ") && strings.HasSuffix(stmt, " TO CURRENT_USER WITH INHERIT FALSE, SET TRUE")
}
