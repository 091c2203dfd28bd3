package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

var (
	// ErrExists is a Put of an artifact that is already complete: artifacts are never overwritten.
	ErrExists = errors.New("the artifact already exists")
	// ErrIncomplete is a Get of an artifact without a manifest: never completed, being written, or deleted.
	ErrIncomplete = errors.New("the artifact is not complete (no manifest)")
	// ErrChecksum is data that does not match its manifest's size or SHA-256: whatever Get wrote is invalid.
	ErrChecksum = errors.New("the data does not match its manifest")
)

// Repository reads and writes the artifacts of one namespace.
type Repository struct {
	store *objectstore.Scoped
	// now is the clock of Started and Completed.
	now func() time.Time
}

// NewRepository is the repository of the namespace store is scoped to.
func NewRepository(store *objectstore.Scoped) *Repository {
	return &Repository{store: store, now: time.Now}
}

// checkRef validates ref and that it is of the repository's namespace.
func (r *Repository) checkRef(ref Ref) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if ref.Namespace != r.store.Namespace() {
		return fmt.Errorf("%w: %s is not in namespace %q", objectstore.ErrOutsideScope, ref, r.store.Namespace())
	}
	return nil
}

// PutOptions are what the caller knows about the data besides its bytes.
type PutOptions struct {
	Format      Format
	ToolVersion string
	Facts       map[string]string
	// DataDone, when set, is called once the data is stored and before the manifest is written; an error
	// leaves the artifact incomplete. It is how the producer's exit status decides: a dump tool that dies
	// midway closes its output like one that finished, so the end of the stream alone proves nothing.
	DataDone func() error
	// FactsAfterData, when set, is called after DataDone and returns facts known only once the data has
	// passed (a count taken while it streamed), added to Facts; an error leaves the artifact incomplete.
	FactsAfterData func() (map[string]string, error)
}

// Put streams data to ref's data object (multipart, objectstore.PartSize at a time, so memory does not grow
// with the size), computing its size and SHA-256 on the way, then writes the manifest that makes the artifact
// complete. An error at any point leaves no manifest, so the artifact never looks complete and a later Put
// of the same ref may try again; a ref whose manifest exists is refused with ErrExists.
func (r *Repository) Put(ctx context.Context, ref Ref, data io.Reader, opts PutOptions) (Manifest, error) {
	if err := r.checkRef(ref); err != nil {
		return Manifest{}, err
	}
	if !formats[opts.Format] {
		return Manifest{}, fmt.Errorf("format %q is neither %s nor %s", opts.Format, FormatPgDumpCustom, FormatBuntDB)
	}
	switch _, err := r.store.Size(ctx, ref.ManifestKey()); {
	case err == nil:
		return Manifest{}, fmt.Errorf("put %s: %w", ref, ErrExists)
	case !errors.Is(err, objectstore.ErrNotFound):
		return Manifest{}, fmt.Errorf("put %s: %w", ref, err)
	}
	m := Manifest{Version: ManifestVersion, Ref: ref, Format: opts.Format, ToolVersion: opts.ToolVersion,
		Facts: opts.Facts, Started: r.now().UTC()}
	h := sha256.New()
	counted := &countingReader{r: io.TeeReader(data, h)}
	size, err := r.store.Put(ctx, ref.DataKey(), counted, "application/octet-stream")
	if err == nil {
		err = counted.err
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("put %s: data: %w", ref, err)
	}
	if size != counted.n {
		return Manifest{}, fmt.Errorf("put %s: the store took %d bytes of %d read", ref, size, counted.n)
	}
	if opts.DataDone != nil {
		if err := opts.DataDone(); err != nil {
			return Manifest{}, fmt.Errorf("put %s: the data's producer failed, the artifact stays incomplete: %w", ref, err)
		}
	}
	if opts.FactsAfterData != nil {
		more, err := opts.FactsAfterData()
		if err != nil {
			return Manifest{}, fmt.Errorf("put %s: the artifact stays incomplete: %w", ref, err)
		}
		m.Facts = make(map[string]string, len(opts.Facts)+len(more))
		maps.Copy(m.Facts, opts.Facts)
		maps.Copy(m.Facts, more)
	}
	m.Completed, m.Size, m.SHA256 = r.now().UTC(), counted.n, hex.EncodeToString(h.Sum(nil))
	doc, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := r.store.PutBytes(ctx, ref.ManifestKey(), doc, "application/json"); err != nil {
		return Manifest{}, fmt.Errorf("put %s: manifest: %w", ref, err)
	}
	return m, nil
}

// Manifest reads and validates ref's manifest; a missing one is ErrIncomplete.
func (r *Repository) Manifest(ctx context.Context, ref Ref) (Manifest, error) {
	if err := r.checkRef(ref); err != nil {
		return Manifest{}, err
	}
	rc, err := r.store.Get(ctx, ref.ManifestKey())
	if errors.Is(err, objectstore.ErrNotFound) {
		return Manifest{}, fmt.Errorf("%s: %w", ref, ErrIncomplete)
	}
	if err != nil {
		return Manifest{}, err
	}
	defer func() { _ = rc.Close() }()
	// A manifest is a few hundred bytes; a megabyte is far beyond any this program writes.
	doc, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return Manifest{}, err
	}
	return parseManifest(doc, ref)
}

// Get streams ref's data to w and checks it against the manifest: when the size or SHA-256 differs it
// returns ErrChecksum, and what it wrote to w must be treated as invalid (a restore must not use it).
func (r *Repository) Get(ctx context.Context, ref Ref, w io.Writer) (Manifest, error) {
	m, err := r.Manifest(ctx, ref)
	if err != nil {
		return m, err
	}
	rc, err := r.store.Get(ctx, ref.DataKey())
	if err != nil {
		return m, fmt.Errorf("get %s: data: %w", ref, err)
	}
	defer func() { _ = rc.Close() }()
	h := sha256.New()
	// Read at most one byte past the manifest's size: enough to see that the data is longer.
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(rc, m.Size+1))
	if err != nil {
		return m, fmt.Errorf("get %s: data: %w", ref, err)
	}
	return m, verify(m, n, h)
}

func verify(m Manifest, n int64, h hash.Hash) error {
	if n != m.Size {
		return fmt.Errorf("%s: %w: %d bytes where the manifest says %d", m.Ref, ErrChecksum, n, m.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != m.SHA256 {
		return fmt.Errorf("%s: %w: sha256 %s where the manifest says %s", m.Ref, ErrChecksum, sum, m.SHA256)
	}
	return nil
}

// List returns the complete artifacts of kind and name, oldest completion first: those whose manifest is
// valid and whose data object has the manifest's size. Data without a manifest (an interrupted or
// half-deleted artifact) is left out.
func (r *Repository) List(ctx context.Context, kind, name string) ([]Manifest, error) {
	probe := Ref{Namespace: r.store.Namespace(), Kind: kind, Name: name, ID: "x"}
	if err := r.checkRef(probe); err != nil {
		return nil, err
	}
	dir := path.Join(kind, name)
	keys, err := r.store.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, k := range keys {
		id, ok := strings.CutSuffix(strings.TrimPrefix(k, dir+"/"), "/"+manifestObject)
		if !ok || strings.Contains(id, "/") {
			continue
		}
		ref := probe
		ref.ID = id
		m, err := r.Manifest(ctx, ref)
		if err != nil {
			if errors.Is(err, ErrIncomplete) {
				continue // deleted between the listing and the read
			}
			return nil, err
		}
		size, err := r.store.Size(ctx, ref.DataKey())
		if errors.Is(err, objectstore.ErrNotFound) || err == nil && size != m.Size {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b Manifest) int { return a.Completed.Compare(b.Completed) })
	return out, nil
}

// Delete removes ref's manifest first, so the artifact stops being complete before its data goes, then the
// data. Deleting an artifact that does not exist is not an error.
func (r *Repository) Delete(ctx context.Context, ref Ref) error {
	if err := r.checkRef(ref); err != nil {
		return err
	}
	if err := r.store.Delete(ctx, ref.ManifestKey()); err != nil {
		return fmt.Errorf("delete %s: manifest: %w", ref, err)
	}
	if err := r.store.Delete(ctx, ref.DataKey()); err != nil {
		return fmt.Errorf("delete %s: data: %w", ref, err)
	}
	return nil
}

// countingReader counts the bytes read through it and keeps the first error other than io.EOF. Such an
// error is passed on as one that does not match io.ErrUnexpectedEOF: the S3 client takes that error for a
// short last part and would complete the upload of a broken stream.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		if c.err == nil {
			c.err = fmt.Errorf("the data stream broke after %d bytes: %s", c.n, err.Error())
		}
		return n, c.err
	}
	return n, err
}
