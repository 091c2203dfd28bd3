// Package datastore reads ergo's datastore, ircd.db: a buntdb append-only file. It counts the accounts and
// channels in a stream without loading it (Count, for a backup to record while it uploads), counts them in a
// file through buntdb itself as ergo opens it (CountDB, for a restore drill), and writes a fixture with
// ergo's real key schema for tests (WriteFixture). See docs/backup.md.
package datastore
