package postgres

import (
	"fmt"
)

// ConnInfo is s as a libpq keyword/value connection string without the password: host, port, user,
// dbname and sslmode, each value single-quoted and escaped. It is the form to put in a config file that
// anyone who can read the file may see; the password reaches the client through PGPASSWORD (which libpq,
// lib/pq and pgx all read) from a Secret instead.
func (s Settings) ConnInfo() string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=%s",
		quoteValue(s.Host), s.Port, quoteValue(s.User), quoteValue(s.Database), quoteValue(s.SSLMode))
}
