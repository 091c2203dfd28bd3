// Package postgres owns what the operator does to a PostgreSQL server for a PostgresDatabase (and later a
// SojuBouncer): the names of databases and roles, the SQL statements (identifiers quoted by
// pgx.Identifier.Sanitize, passwords sent only as SCRAM-SHA-256 verifiers computed here, so no password
// reaches the server's statement log), generated passwords, the connection settings read from a Secret, and
// the Secret handed to applications. Those parts are pure functions. Admin, in admin.go, is the one part
// that talks to a server: it connects, checks privileges, ensures a role and a database, and drops them.
//
// Ownership on the server is recorded as a comment on the role and on the database (OwnerComment): a
// role or database whose comment names another PostgresDatabase, or that has no comment, is not the
// operator's, and is neither changed nor dropped.
package postgres
