package postgres

import "time"

// DefaultCleanupTimeout is how long a deleted object (PostgresDatabase, SojuBouncer) waits for its
// database and role to be dropped before the operator gives up, leaves them on the server with a
// CleanupAbandoned Warning event and lets the object go: a server or connection that is gone for good
// never holds a finalizer, or the deletion of a namespace, forever.
const DefaultCleanupTimeout = 30 * time.Minute

// cleanupBackoffAfter is how long a blocked cleanup is retried at the caller's soon pace before it
// slows to cleanupSlowRetry.
const (
	cleanupBackoffAfter = 10 * time.Minute
	cleanupSlowRetry    = 5 * time.Minute
)

// CleanupRetry is how soon a blocked cleanup is tried again, deleting after the deletion: soon at first,
// then at most every five minutes.
func CleanupRetry(deleting, soon time.Duration) time.Duration {
	if deleting < cleanupBackoffAfter {
		return soon
	}
	return cleanupSlowRetry
}

// NextCleanup says, for a cleanup blocked deleting after the deletion, when to try again, or that
// timeout has passed and the operator gives up (leaving the database on the server). The retry never
// lands after the timeout, so the object goes close to it. A timeout of zero or less is
// DefaultCleanupTimeout.
func NextCleanup(deleting, timeout, soon time.Duration) (retry time.Duration, giveUp bool) {
	if timeout <= 0 {
		timeout = DefaultCleanupTimeout
	}
	if deleting >= timeout {
		return 0, true
	}
	return min(CleanupRetry(deleting, soon), timeout-deleting), false
}
