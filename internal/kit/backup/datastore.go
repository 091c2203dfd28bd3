package backup

import (
	"io"
	"sync"
	"time"
)

// Datastore is what the program knows of a datastore file format (FormatBuntDB: ergo's ircd.db): the facts
// it records while a copy uploads, and how a drill checks a downloaded copy. The program's caller gives it
// (main.go, SetDatastore), so the kit knows no system; without one, put, verify and restore refuse the
// format.
type Datastore interface {
	// Facts reads the whole stream and returns its facts; modTime is the file's (the base of relative
	// expiries), zero for a stream. An error means the data is not a datastore its server could open.
	Facts(r io.Reader, modTime time.Time) (map[string]string, error)
	// HasFacts says whether recorded holds the facts Check compares with.
	HasFacts(recorded map[string]string) bool
	// Check opens the downloaded copy at path with the datastore's own library and compares it with the
	// facts recorded at backup time: mismatch names what differs ("" when they agree); err is a copy that
	// cannot be opened.
	Check(path string, recorded map[string]string) (mismatch string, err error)
	// Open opens the downloaded copy at path with the datastore's own library, as its server would when
	// it starts: err is a copy the server could not open. A restore of an artifact without facts checks
	// no more than this.
	Open(path string) error
}

var (
	datastoresMu sync.RWMutex
	datastores   = map[Format]Datastore{}
)

// SetDatastore makes d the reader of format f's facts and drills.
func SetDatastore(f Format, d Datastore) {
	datastoresMu.Lock()
	defer datastoresMu.Unlock()
	datastores[f] = d
}

func datastoreFor(f Format) (Datastore, bool) {
	datastoresMu.RLock()
	defer datastoresMu.RUnlock()
	d, ok := datastores[f]
	return d, ok
}
