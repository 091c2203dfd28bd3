package backup

import (
	"testing"

	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

// server is the package's versitygw, started once in TestMain; every test makes its own bucket.
var server *s3test.Server

func TestMain(m *testing.M) {
	// What main.go gives the program: ergo's datastore for FormatBuntDB (the kit knows no system).
	SetDatastore(FormatBuntDB, ergotest.Datastore())
	s3test.Main(m, "backup", &server)
}

// newBucket makes a bucket for one test and returns its configuration (prefix "backups") and the
// unscoped store, through which a test can reach any key as an attacker or a broken store would.
func newBucket(t *testing.T, srv *s3test.Server, name string) (objectstore.Config, *objectstore.Store) {
	t.Helper()
	cfg, err := srv.CreateBucket(t.Context(), name, "backups")
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	store, err := objectstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, store
}

// newRepo is the repository of namespace in a new bucket.
func newRepo(t *testing.T, bucket, namespace string) (*Repository, *objectstore.Store) {
	t.Helper()
	_, store := newBucket(t, server, bucket)
	scoped, err := store.Scope(namespace)
	if err != nil {
		t.Fatal(err)
	}
	return NewRepository(scoped), store
}
