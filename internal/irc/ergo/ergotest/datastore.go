package ergotest

import (
	"github.com/platform-operator/platform-operator/internal/irc/ergo/datastore"
)

// Datastore is ergo's datastore as the backup program knows it, for the kit's own tests (the kit knows no
// system; main.go gives the program the same).
func Datastore() datastore.Backup { return datastore.Backup{} }

// DatastoreFixture is an ircd.db to write (datastore.Fixture).
type DatastoreFixture = datastore.Fixture

// WriteDatastore writes an ircd.db with ergo's keys at path (datastore.WriteFixture) and returns what ergo
// would load of it.
func WriteDatastore(path string, f DatastoreFixture) (datastore.Counts, error) {
	return datastore.WriteFixture(path, f)
}

// CountDatastore opens the ircd.db at path with buntdb, as ergo does, and counts what ergo would find
// (datastore.CountDB).
func CountDatastore(path string) (datastore.Counts, error) { return datastore.CountDB(path) }
