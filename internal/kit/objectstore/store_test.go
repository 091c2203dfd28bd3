package objectstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

// server is the package's versitygw, started once in TestMain.
var server *s3test.Server

func TestMain(m *testing.M) { s3test.Main(m, "objectstore", &server) }

func bucket(t *testing.T, name string) objectstore.Config {
	t.Helper()
	cfg, err := server.CreateBucket(t.Context(), name, "platform")
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return cfg
}

func TestStoreRoundTrip(t *testing.T) {
	cfg := bucket(t, "round-trip")
	store, err := objectstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Check(t.Context()); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	a, err := store.Scope("team-a")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	n, err := a.Put(t.Context(), "k/x/data", bytes.NewReader(data), "")
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put() = %d, %v", n, err)
	}
	rc, err := a.Get(t.Context(), "k/x/data")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get() = %d bytes, %v; want the %d put", len(got), err, len(data))
	}
	keys, err := a.List(t.Context(), "k")
	if err != nil || len(keys) != 1 || keys[0] != "k/x/data" {
		t.Fatalf("List() = %q, %v", keys, err)
	}
	// The object lies where the layout says: <bucket>/<prefix>/<namespace>/<key>.
	if _, err := os.Stat(server.Root + "/round-trip/platform/team-a/k/x/data"); err != nil {
		t.Fatalf("the object is not at <prefix>/<namespace>/<key>: %v", err)
	}
	// Another namespace's handle sees nothing of team-a's.
	b, _ := store.Scope("team-b")
	if keys, err := b.List(t.Context(), "k"); err != nil || len(keys) != 0 {
		t.Fatalf("team-b lists %q, %v", keys, err)
	}
	if _, err := b.Get(t.Context(), "k/x/data"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("team-b Get() = %v, want ErrNotFound", err)
	}
	if err := a.Delete(t.Context(), "k/x/data"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Size(t.Context(), "k/x/data"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("Size() after Delete = %v, want ErrNotFound", err)
	}
}

// TestStoreRefusals: wrong credentials and a missing bucket are errors that say so and hold no secret; the
// same calls with the right credentials and bucket are the control.
func TestStoreRefusals(t *testing.T) {
	good := bucket(t, "refusals")
	wrongSecret := good
	wrongSecret.Credentials.SecretAccessKey = "not-" + server.SecretAccessKey
	unknownKey := good
	unknownKey.Credentials.AccessKeyID = "AKIANOBODY"
	noBucket := good
	noBucket.Bucket = "no-such-bucket"
	tests := []struct {
		name string
		cfg  objectstore.Config
		want error
	}{
		{"control", good, nil},
		{"wrong secret", wrongSecret, objectstore.ErrCredentials},
		{"unknown access key", unknownKey, objectstore.ErrCredentials},
		{"missing bucket", noBucket, objectstore.ErrNoBucket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := objectstore.New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := store.Scope("team-a")
			errs := map[string]error{"check": store.Check(t.Context())}
			_, errs["put"] = h.Put(t.Context(), "x/data", strings.NewReader("payload"), "")
			_, errs["get"] = h.Get(t.Context(), "x/data")
			for op, err := range errs {
				if tt.want == nil {
					if err != nil {
						t.Errorf("%s: %v, want success", op, err)
					}
					continue
				}
				if !errors.Is(err, tt.want) {
					t.Errorf("%s: %v, want %v", op, err, tt.want)
					continue
				}
				for _, secret := range []string{tt.cfg.Credentials.SecretAccessKey, server.SecretAccessKey} {
					if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
						t.Errorf("%s: the error holds a secret: %v", op, err)
					}
				}
				t.Logf("%s: %v", op, err)
			}
		})
	}
}
