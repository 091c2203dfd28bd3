package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

func ref(id string) Ref {
	return Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "app", ID: id}
}

// pattern is n bytes of a deterministic, non-repeating-per-part stream, generated as it is read.
type pattern struct{ n, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rem := p.n - p.off; int64(len(b)) > rem {
		b = b[:rem]
	}
	for i := range b {
		x := uint64(p.off + int64(i))
		b[i] = byte(x ^ x>>8 ^ x>>16 ^ x>>24)
	}
	p.off += int64(len(b))
	return len(b), nil
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func TestPutGetRoundTrip(t *testing.T) {
	repo, _ := newRepo(t, "round-trip", "team-a")
	for _, tt := range []struct {
		id   string
		size int64
	}{{"empty", 0}, {"one-byte", 1}, {"three-mib", 3<<20 + 17}} {
		t.Run(tt.id, func(t *testing.T) {
			data, _ := io.ReadAll(&pattern{n: tt.size})
			m, err := repo.Put(t.Context(), ref(tt.id), bytes.NewReader(data), PutOptions{Format: FormatPgDumpCustom, ToolVersion: "pg_dump 15"})
			if err != nil {
				t.Fatalf("Put() = %v", err)
			}
			if m.Size != tt.size || m.SHA256 != sum(data) || m.Started.IsZero() || m.Completed.Before(m.Started) {
				t.Fatalf("Put() manifest = %+v", m)
			}
			var out bytes.Buffer
			got, err := repo.Get(t.Context(), ref(tt.id), &out)
			if err != nil {
				t.Fatalf("Get() = %v", err)
			}
			if !bytes.Equal(out.Bytes(), data) || got.SHA256 != m.SHA256 || got.ToolVersion != "pg_dump 15" {
				t.Fatalf("Get() = %d bytes, manifest %+v; want the %d put", out.Len(), got, len(data))
			}
		})
	}
	list, err := repo.List(t.Context(), "PostgresDatabase", "app")
	if err != nil || len(list) != 3 {
		t.Fatalf("List() = %d artifacts, %v; want 3", len(list), err)
	}
}

// TestGetDetectsCorruption flips one byte of the data object through the S3 API (and, separately, cuts
// it short): Get must report ErrChecksum. The control is the same Get before the change.
func TestGetDetectsCorruption(t *testing.T) {
	repo, store := newRepo(t, "corruption", "team-a")
	data, _ := io.ReadAll(&pattern{n: 2 << 20})
	for _, id := range []string{"flipped", "truncated"} {
		if _, err := repo.Put(t.Context(), ref(id), bytes.NewReader(data), PutOptions{Format: FormatPgDumpCustom}); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Get(t.Context(), ref(id), io.Discard); err != nil {
			t.Fatalf("control: Get(%s) before the corruption = %v", id, err)
		}
	}
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0x01
	raw := func(id string) string { return "team-a/" + ref(id).DataKey() }
	if err := store.PutBytes(t.Context(), raw("flipped"), bad, ""); err != nil {
		t.Fatal(err)
	}
	if err := store.PutBytes(t.Context(), raw("truncated"), data[:len(data)-1], ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"flipped", "truncated"} {
		if _, err := repo.Get(t.Context(), ref(id), io.Discard); !errors.Is(err, ErrChecksum) {
			t.Errorf("Get(%s) = %v, want ErrChecksum", id, err)
		} else {
			t.Logf("Get(%s): %v", id, err)
		}
	}
	// Longer data is caught too, without reading more than one byte past the manifest's size.
	if err := store.PutBytes(t.Context(), raw("truncated"), append(bytes.Clone(data), 'x'), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Get(t.Context(), ref("truncated"), io.Discard); !errors.Is(err, ErrChecksum) {
		t.Errorf("Get(longer) = %v, want ErrChecksum", err)
	}
}

// TestManifestOfAnotherArtifact: a manifest copied from another artifact (another database's dump put
// in place of this one's) is refused, even though its checksum matches the data copied with it.
func TestManifestOfAnotherArtifact(t *testing.T) {
	repo, store := newRepo(t, "swapped", "team-a")
	other := Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "other", ID: "1"}
	if _, err := repo.Put(t.Context(), other, strings.NewReader("other's rows"), PutOptions{Format: FormatPgDumpCustom}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []func(Ref) string{Ref.DataKey, Ref.ManifestKey} {
		rc, err := store.Get(t.Context(), "team-a/"+k(other))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		_ = rc.Close()
		if err := store.PutBytes(t.Context(), "team-a/"+k(ref("1")), b, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := repo.Get(t.Context(), other, io.Discard); err != nil {
		t.Fatalf("control: Get(other) = %v", err)
	}
	if _, err := repo.Get(t.Context(), ref("1"), io.Discard); err == nil || !strings.Contains(err.Error(), "manifest is of team-a/PostgresDatabase/other/1") {
		t.Fatalf("Get() of a copied artifact = %v, want the manifest refused", err)
	}
}

func TestPutRefusals(t *testing.T) {
	repo, _ := newRepo(t, "refusals", "team-a")
	ctx := t.Context()
	if _, err := repo.Put(ctx, ref("1"), strings.NewReader("x"), PutOptions{Format: FormatBuntDB}); err != nil {
		t.Fatalf("control: Put() = %v", err)
	}
	if _, err := repo.Put(ctx, ref("1"), strings.NewReader("y"), PutOptions{Format: FormatBuntDB}); !errors.Is(err, ErrExists) {
		t.Errorf("Put() over a complete artifact = %v, want ErrExists", err)
	}
	other := ref("1")
	other.Namespace = "team-b"
	for name, r := range map[string]Ref{
		"another namespace": other,
		"dot-dot name":      {Namespace: "team-a", Kind: "PostgresDatabase", Name: "..", ID: "1"},
		"slash in id":       {Namespace: "team-a", Kind: "PostgresDatabase", Name: "app", ID: "../../team-b/x"},
		"encoded id":        {Namespace: "team-a", Kind: "PostgresDatabase", Name: "app", ID: "%2e%2e"},
	} {
		if _, err := repo.Put(ctx, r, strings.NewReader("x"), PutOptions{Format: FormatBuntDB}); err == nil {
			t.Errorf("Put(%s) succeeded", name)
		}
		if _, err := repo.Get(ctx, r, io.Discard); err == nil {
			t.Errorf("Get(%s) succeeded", name)
		}
	}
	if _, err := repo.Put(ctx, ref("2"), strings.NewReader("x"), PutOptions{Format: "tar"}); err == nil {
		t.Error("Put() of an unknown format succeeded")
	}
}

// cancelAfter is a stream that calls cancel once n bytes have been read and then keeps blocking on its
// context, as a dump whose backup is interrupted.
type cancelAfter struct {
	pattern
	at     int64
	cancel func()
}

func (c *cancelAfter) Read(b []byte) (int, error) {
	if c.off >= c.at {
		c.cancel()
		c.cancel = func() {}
	}
	return c.pattern.Read(b)
}

// TestInterruptedPut: a put cut short (its context cancelled after more than one part; the store killed
// mid-upload) leaves no complete-looking artifact, and a later put of the same id succeeds.
func TestInterruptedPut(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		repo, _ := newRepo(t, "cancelled", "team-a")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		stream := &cancelAfter{pattern: pattern{n: 64 << 20}, at: 40 << 20, cancel: cancel}
		if _, err := repo.Put(ctx, ref("1"), stream, PutOptions{Format: FormatPgDumpCustom}); err == nil {
			t.Fatal("Put() with its context cancelled midway succeeded")
		}
		assertIncomplete(t, repo, ref("1"))
		assertRetry(t, repo, ref("1"))
	})
	t.Run("store killed", func(t *testing.T) {
		srv, err := s3test.Start(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = srv.Stop() }()
		_, store := newBucket(t, srv, "killed")
		scoped, _ := store.Scope("team-a")
		repo := NewRepository(scoped)
		stream := &cancelAfter{pattern: pattern{n: 64 << 20}, at: 40 << 20, cancel: srv.Kill}
		if _, err := repo.Put(t.Context(), ref("1"), stream, PutOptions{Format: FormatPgDumpCustom}); err == nil {
			t.Fatal("Put() with the store killed midway succeeded")
		} else {
			t.Logf("Put() with the store killed: %v", err)
		}
		if err := srv.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
		assertIncomplete(t, repo, ref("1"))
		assertRetry(t, repo, ref("1"))
	})
}

func assertIncomplete(t *testing.T, repo *Repository, r Ref) {
	t.Helper()
	if _, err := repo.Manifest(t.Context(), r); !errors.Is(err, ErrIncomplete) {
		t.Errorf("Manifest() after the interruption = %v, want ErrIncomplete", err)
	}
	if _, err := repo.Get(t.Context(), r, io.Discard); !errors.Is(err, ErrIncomplete) {
		t.Errorf("Get() after the interruption = %v, want ErrIncomplete", err)
	}
	if list, err := repo.List(t.Context(), r.Kind, r.Name); err != nil || len(list) != 0 {
		t.Errorf("List() after the interruption = %+v, %v; want nothing", list, err)
	}
}

func assertRetry(t *testing.T, repo *Repository, r Ref) {
	t.Helper()
	m, err := repo.Put(t.Context(), r, &pattern{n: 1 << 20}, PutOptions{Format: FormatPgDumpCustom})
	if err != nil {
		t.Fatalf("Put() again after the interruption = %v", err)
	}
	if list, err := repo.List(t.Context(), r.Kind, r.Name); err != nil || len(list) != 1 || list[0].SHA256 != m.SHA256 {
		t.Fatalf("List() after the retry = %+v, %v", list, err)
	}
}

// TestListAndDelete: List returns only complete artifacts (data without a manifest is left out), and
// Delete takes an artifact out of the list and the store.
func TestListAndDelete(t *testing.T) {
	repo, store := newRepo(t, "list-delete", "team-a")
	for _, id := range []string{"a", "b"} {
		if _, err := repo.Put(t.Context(), ref(id), strings.NewReader(id), PutOptions{Format: FormatPgDumpCustom}); err != nil {
			t.Fatal(err)
		}
	}
	// An interrupted artifact: its data, no manifest.
	if err := store.PutBytes(t.Context(), "team-a/"+ref("c").DataKey(), []byte("c"), ""); err != nil {
		t.Fatal(err)
	}
	// Another source's artifact is not listed with app's.
	if _, err := repo.Put(t.Context(), Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "app2", ID: "x"}, strings.NewReader("x"), PutOptions{Format: FormatPgDumpCustom}); err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		list, err := repo.List(t.Context(), "PostgresDatabase", "app")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range list {
			ids = append(ids, m.ID)
		}
		return ids
	}
	if got := strings.Join(ids(), ","); got != "a,b" {
		t.Fatalf("List() = %s, want a,b", got)
	}
	// A manifest whose data is gone (removed behind the operator's back) is not a complete artifact.
	if _, err := repo.Put(t.Context(), ref("d"), strings.NewReader("d"), PutOptions{Format: FormatPgDumpCustom}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(), ","); got != "a,b,d" {
		t.Fatalf("control: List() = %s, want a,b,d", got)
	}
	if err := store.Delete(t.Context(), "team-a/"+ref("d").DataKey()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(), ","); got != "a,b" {
		t.Fatalf("List() with d's data gone = %s, want a,b", got)
	}
	if err := repo.Delete(t.Context(), ref("a")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(), ","); got != "b" {
		t.Fatalf("List() after Delete(a) = %s, want b", got)
	}
	for _, k := range []string{ref("a").DataKey(), ref("a").ManifestKey()} {
		if _, err := store.Size(t.Context(), "team-a/"+k); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("%s after Delete: %v, want ErrNotFound", k, err)
		}
	}
	if err := repo.Delete(t.Context(), ref("a")); err != nil {
		t.Errorf("Delete() of a deleted artifact = %v, want nil", err)
	}
}

// failAfter is a stream that fails after n bytes, as a pipe whose reading breaks.
type failAfter struct {
	pattern
	at int64
}

func (f *failAfter) Read(b []byte) (int, error) {
	if f.off >= f.at {
		return 0, io.ErrUnexpectedEOF
	}
	return f.pattern.Read(b)
}

// TestFailedProducer: with the store up and the context live, a stream that breaks midway, or a producer
// that reports failure after its stream ended (DataDone), leaves no complete-looking artifact; the same
// put with a producer that succeeds is the control.
func TestFailedProducer(t *testing.T) {
	repo, _ := newRepo(t, "producer", "team-a")
	if _, err := repo.Put(t.Context(), ref("broken"), &failAfter{pattern: pattern{n: 20 << 20}, at: 18 << 20}, PutOptions{Format: FormatPgDumpCustom}); err == nil {
		t.Fatal("Put() of a broken stream succeeded")
	}
	assertIncomplete(t, repo, ref("broken"))
	failed := PutOptions{Format: FormatPgDumpCustom, DataDone: func() error { return errors.New("pg_dump: exit status 1") }}
	if _, err := repo.Put(t.Context(), ref("dump-failed"), strings.NewReader("a dump cut short"), failed); err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("Put() with a failed producer = %v", err)
	}
	assertIncomplete(t, repo, ref("dump-failed"))
	ok := PutOptions{Format: FormatPgDumpCustom, DataDone: func() error { return nil }}
	if _, err := repo.Put(t.Context(), ref("dump-failed"), strings.NewReader("a whole dump"), ok); err != nil {
		t.Fatalf("control: Put() with a producer that succeeded = %v", err)
	}
}
