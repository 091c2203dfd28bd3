// Package postgres owns what the operator does to a PostgreSQL server for a PostgresDatabase and a
// SojuBouncer. Its pure parts are the names of databases and roles, the SQL statements (identifiers
// quoted by pgx.Identifier.Sanitize, passwords sent only as SCRAM-SHA-256 verifiers computed here, so no
// password reaches the server's statement log), generated passwords, the connection settings read from a
// Secret, and the Secret handed to a PostgresDatabase's applications. Its client parts talk to a server:
// Admin (admin.go) connects, checks privileges, ensures a role and a database and drops them; Sessions
// (pool.go) keeps admin sessions per login; Provisioner (provision.go) is the one flow both controllers
// call, returning a condition reason, a retry and a message.
//
// Ownership on the server is recorded as a comment on the role and on the database (OwnerComment): a
// role or database whose comment names another object, or that has no comment, is not the operator's,
// and is neither changed nor dropped.
package postgres
