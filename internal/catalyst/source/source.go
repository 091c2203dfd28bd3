package source

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// Limits on what one checkout may hold: a repository beyond them is refused rather than filling the
// operator's disk.
const (
	// MaxFiles is the most regular files a checkout writes.
	MaxFiles = 20000
	// MaxBytes is the most bytes a checkout writes.
	MaxBytes = 256 << 20
	// DefaultEntries is how many checkouts the cache keeps when Fetcher.MaxEntries is zero.
	DefaultEntries = 16
	// DefaultMaxFetchBytes is how many bytes one fetch may receive when Fetcher.MaxFetchBytes is zero.
	DefaultMaxFetchBytes = 512 << 20
	// DefaultMaxCacheBytes is the cache's byte budget when Fetcher.MaxCacheBytes is zero: three quarters
	// of the operator's 2Gi cache volume (config/manager/manager.yaml), which also holds Helm's and the
	// kustomize builds' temporary files.
	DefaultMaxCacheBytes = 1536 << 20
	// DefaultTimeout bounds one fetch when Fetcher.Timeout is zero.
	DefaultTimeout = 2 * time.Minute
	// branchDepth is how deep a branch is fetched when the server cannot send a commit by its id: a
	// commit this close to the branch tip is found without the whole history.
	branchDepth = 50
)

// ErrCommitNotFound is a commit that is not on the branch fetched (nor, for a full id, fetchable by id).
var ErrCommitNotFound = errors.New("commit not found")

// Request names one commit of one repository, and who asks for it.
type Request struct {
	// URL is the repository's https URL (see Fetcher.Allowed).
	URL string
	// Commit is the commit id, full (40 hex digits) or abbreviated (at least 7).
	Commit string
	// Branch is where to look for the commit when the server cannot send it by id, or the id is
	// abbreviated; every branch when empty.
	Branch string
	// Namespace is the namespace of the Project that asks: a checkout is served only to the namespace
	// that fetched it.
	Namespace string
	// Auth is the credentials, or nil for none. A checkout is served only to a request with the same
	// credentials (or, for one fetched anonymously, without any).
	Auth *Auth
}

// Auth is HTTP basic credentials: a username and password, or a token (sent as the password).
type Auth struct {
	Username, Password string
}

// TokenUser is the username sent with a token: GitHub and Gitea read the token from the password and
// accept any username; GitLab accepts this one for personal, project and group access tokens.
const TokenUser = "x-access-token"

// Checkout is one commit's files on disk.
type Checkout struct {
	// Dir is the directory holding the commit's tree. It is read only while the callback runs.
	Dir string
	// Commit is the full commit id.
	Commit string
}

// Fetcher fetches commits into a cache directory, at most MaxEntries of them and at most MaxCacheBytes on
// disk, dropping the least recently used. A Fetcher owns its directory: two Fetchers must not share one,
// and what a Fetcher finds there on first use (the entries of an earlier process, which its keys cannot
// name) is removed. Its fields are read on first use and must not change afterwards.
type Fetcher struct {
	// Dir is the cache directory; a directory under os.TempDir when empty.
	Dir string
	// MaxEntries bounds the cache; DefaultEntries when zero.
	MaxEntries int
	// CABundle is PEM certificates trusted for https besides the system's (a private Git server).
	CABundle []byte
	// Hosts, when not empty, are the only hosts fetched from (by name, without port), whatever their
	// address. When empty, any host is fetched from whose address is a public one (see Allowed).
	Hosts []string
	// MaxFetchBytes bounds the bytes one fetch receives from the server; DefaultMaxFetchBytes when zero.
	MaxFetchBytes int64
	// Timeout bounds one fetch, on top of the caller's context; DefaultTimeout when zero.
	Timeout time.Duration
	// MaxCacheBytes is the cache's byte budget (DefaultMaxCacheBytes when zero): checkouts and fetches
	// under way together never hold more on disk. A fetch that needs room evicts the least recently used
	// checkouts not in use; one that needs more than the whole budget, or finds every byte of it in use,
	// fails as it writes the byte beyond, with ErrTooLarge.
	MaxCacheBytes int64

	once    sync.Once
	initErr error
	// secret keys the HMAC that names cache entries: random per Fetcher, so a directory name reveals
	// nothing of the credentials that are part of the key.
	secret []byte
	tls    *tls.Config

	mu   sync.Mutex
	keys map[string]*keyState
	// entries are the complete checkouts on disk, by key; used is the bytes counted on disk: entries,
	// fetches under way, and evicted entries not yet removed. Both are guarded by mu.
	entries map[string]*entry
	used    int64
	// clock orders uses for LRU eviction (a counter: the wall clock can stand still between two uses).
	clock uint64
}

// entry is one checkout in the cache: its bytes on disk as counted, and when it was last used.
type entry struct {
	size int64
	used uint64
}

// keyState is one cache key's callers: while users is above zero the entry is not evicted, and lock
// (a one-slot semaphore, so a waiter can give up with its context) is held while the entry is checked or
// fetched, so only that key's callers wait for a slow fetch.
type keyState struct {
	users int
	lock  chan struct{}
}

func (f *Fetcher) init() error {
	f.once.Do(func() {
		f.secret = make([]byte, 32)
		if _, err := rand.Read(f.secret); err != nil {
			f.initErr = fmt.Errorf("source: %w", err)
			return
		}
		if f.tls, f.initErr = tlsConfig(f.CABundle); f.initErr != nil {
			return
		}
		f.entries = map[string]*entry{}
		root, err := f.root()
		if err != nil {
			f.initErr = err
			return
		}
		// What an earlier Fetcher left is keyed under another secret: nothing can name it again, and its
		// bytes would count against no budget.
		if des, err := os.ReadDir(root); err == nil {
			for _, e := range des {
				if _, _, ok := entryName(e.Name()); ok {
					_ = os.RemoveAll(filepath.Join(root, e.Name()))
				}
			}
		}
	})
	return f.initErr
}

func (f *Fetcher) maxCacheBytes() int64 {
	if f.MaxCacheBytes > 0 {
		return f.MaxCacheBytes
	}
	return DefaultMaxCacheBytes
}

func (f *Fetcher) timeout() time.Duration {
	if f.Timeout > 0 {
		return f.Timeout
	}
	return DefaultTimeout
}

func (f *Fetcher) maxFetchBytes() int64 {
	if f.MaxFetchBytes > 0 {
		return f.MaxFetchBytes
	}
	return DefaultMaxFetchBytes
}

// With fetches req's commit (or finds it in the cache) and calls fn with its checkout. The checkout is
// not evicted while fn runs.
func (f *Fetcher) With(ctx context.Context, req Request, fn func(Checkout) error) error {
	if err := validCommit(req.Commit); err != nil {
		return err
	}
	if err := f.Allowed(req.URL); err != nil {
		return err
	}
	if err := f.init(); err != nil {
		return err
	}
	root, err := f.root()
	if err != nil {
		return err
	}
	key := f.cacheKey(req)
	dir := filepath.Join(root, key)
	ks := f.acquire(key)
	defer f.release(key)

	select {
	case ks.lock <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("fetch %s: %w", req.URL, ctx.Err())
	}
	commit, err := "", errors.New("not cached")
	if f.touch(key) {
		commit, err = readMarker(dir)
	}
	if err != nil {
		began := time.Now()
		commit, err = f.fetch(ctx, req, key, dir)
		instruments.GitFetched(err == nil, time.Since(began))
	}
	<-ks.lock
	if err != nil {
		return err
	}
	f.evict(root)
	return fn(Checkout{Dir: filepath.Join(dir, "tree"), Commit: commit})
}

func (f *Fetcher) root() (string, error) {
	dir := f.Dir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "catalyst-source")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("source cache: %w", err)
	}
	return dir, nil
}

func (f *Fetcher) acquire(key string) *keyState {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = map[string]*keyState{}
	}
	ks, ok := f.keys[key]
	if !ok {
		ks = &keyState{lock: make(chan struct{}, 1)}
		f.keys[key] = ks
	}
	ks.users++
	return ks
}

// release forgets the key with its last user, so keys that were asked for once (or failed) cost nothing.
func (f *Fetcher) release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ks := f.keys[key]; ks != nil {
		if ks.users--; ks.users <= 0 {
			delete(f.keys, key)
		}
	}
}

// keyLen is the length of a cache entry's name: hex of 16 bytes of HMAC.
const keyLen = 32

// entryName splits a cache directory's entry into its key and its suffix ("" for a checkout, "partial"
// for a fetch under way, "trash-…" for one being removed); ok is false for what is not the cache's.
func entryName(name string) (key, suffix string, ok bool) {
	key, suffix, _ = strings.Cut(name, ".")
	if len(key) != keyLen || strings.Trim(key, "0123456789abcdef") != "" {
		return "", "", false
	}
	return key, suffix, true
}

// touch marks key's checkout used now; false when the cache holds none.
func (f *Fetcher) touch(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[key]
	if ok {
		f.clock++
		e.used = f.clock
	}
	return ok
}

// evict removes the least recently used checkouts beyond MaxEntries, except those in use.
func (f *Fetcher) evict(root string) {
	limit := f.MaxEntries
	if limit <= 0 {
		limit = DefaultEntries
	}
	f.mu.Lock()
	var victims []victim
	for len(f.entries) > limit {
		v, ok := f.victimLocked(root)
		if !ok {
			break
		}
		victims = append(victims, v)
	}
	f.mu.Unlock()
	f.remove(victims)
}

// victim is an evicted checkout renamed away, to be removed, and its bytes.
type victim struct {
	dir  string
	size int64
}

// victimLocked takes the least recently used checkout that no caller holds out of the cache: it is
// renamed away (which no caller can observe half-done: a caller of its key takes mu first) and its bytes
// stay counted until remove removes it. ok is false when every checkout is in use. f.mu is held.
func (f *Fetcher) victimLocked(root string) (victim, bool) {
	best := ""
	for key, e := range f.entries {
		if f.keys[key] != nil {
			continue
		}
		if best == "" || e.used < f.entries[best].used {
			best = key
		}
	}
	if best == "" {
		return victim{}, false
	}
	size := f.entries[best].size
	delete(f.entries, best)
	to := filepath.Join(root, best+".trash-"+randomSuffix())
	if err := os.Rename(filepath.Join(root, best), to); err != nil {
		to = filepath.Join(root, best)
	}
	return victim{dir: to, size: size}, true
}

// remove removes evicted checkouts and gives their bytes back to the budget.
func (f *Fetcher) remove(victims []victim) {
	for _, v := range victims {
		_ = os.RemoveAll(v.dir)
		f.mu.Lock()
		f.used -= v.size
		f.mu.Unlock()
	}
}

// Used is how many bytes the cache counts on disk: its checkouts and the fetches under way.
func (f *Fetcher) Used() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used
}

// blockSize is what a file or directory costs on disk at least: sizes are counted rounded up to it, so
// that many small files count what they take, not what they hold.
const blockSize = 4096

func blocks(n int64) int64 { return (n + blockSize - 1) / blockSize * blockSize }

// meter is one fetch's share of the cache's budget: every byte it writes is reserved first.
type meter struct {
	f    *Fetcher
	root string
	// total is every byte this fetch holds reserved; git is the part in its repository and incoming
	// pack, given back when they are removed.
	total, git int64
}

// reserve reserves n bytes for the fetch, evicting the least recently used checkouts not in use to make
// room; ErrTooLarge when the fetch alone would hold more than the budget, or when the checkouts in use
// and other fetches leave no room.
func (m *meter) reserve(n int64) error {
	f := m.f
	budget := f.maxCacheBytes()
	for {
		f.mu.Lock()
		if m.total+n > budget {
			f.mu.Unlock()
			return fmt.Errorf("%w: the repository's checkout exceeds the Git cache budget of %s", ErrTooLarge, size(budget))
		}
		if f.used+n <= budget {
			f.used += n
			m.total += n
			f.mu.Unlock()
			return nil
		}
		v, ok := f.victimLocked(m.root)
		f.mu.Unlock()
		if !ok {
			return fmt.Errorf("%w: the Git cache budget of %s is taken by checkouts in use and fetches under way; the fetch is tried again later",
				ErrTooLarge, size(budget))
		}
		f.remove([]victim{v})
	}
}

// reserveGit reserves n bytes of the fetch's repository or incoming pack.
func (m *meter) reserveGit(n int64) error {
	if err := m.reserve(n); err != nil {
		return err
	}
	m.git += n
	return nil
}

// releaseGit gives back n bytes of the repository once removed.
func (m *meter) releaseGit(n int64) {
	n = min(n, m.git)
	m.git -= n
	m.total -= n
	m.f.mu.Lock()
	m.f.used -= n
	m.f.mu.Unlock()
}

// settle ends the fetch: on success its checkout (what it holds besides the repository) becomes key's
// entry; otherwise (or when the repository remains) the bytes are given back once removed.
func (m *meter) settle(key string, ok bool) {
	f := m.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !ok {
		f.used -= m.total
		m.total, m.git = 0, 0
		return
	}
	f.used -= m.git
	m.total -= m.git
	m.git = 0
	f.clock++
	if old := f.entries[key]; old != nil {
		f.used -= old.size
	}
	f.entries[key] = &entry{size: m.total, used: f.clock}
}

// meteredWriter reserves each write's bytes before writing them.
type meteredWriter struct {
	w       io.Writer
	reserve func(int64) error
}

func (w meteredWriter) Write(p []byte) (int, error) {
	if err := w.reserve(int64(len(p))); err != nil {
		return 0, err
	}
	return w.w.Write(p)
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Entries is how many checkouts the cache holds.
func (f *Fetcher) Entries() (int, error) {
	root, err := f.root()
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(root)
	n := 0
	for _, e := range entries {
		if _, suffix, ok := entryName(e.Name()); ok && suffix == "" {
			n++
		}
	}
	return n, err
}

// markerFile holds, inside a cache entry, the full commit id; it is written last, so an entry without
// it is incomplete.
const markerFile = "commit"

func readMarker(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, markerFile))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// write writes the commit's regular files under dir/tree, each reserved in m (rounded up to whole
// blocks, as is each directory) before a byte of it is written. Symlinks and submodules are left out: a
// link could point outside the checkout, and a submodule is another repository.
func write(ctx context.Context, commit *object.Commit, dir string, m *meter) error {
	if err := os.MkdirAll(filepath.Join(dir, "tree"), 0o700); err != nil {
		return err
	}
	tree, err := commit.Tree()
	if err != nil {
		return err
	}
	files, total := 0, int64(0)
	dirs := map[string]bool{}
	return tree.Files().ForEach(func(file *object.File) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if file.Mode != filemode.Regular && file.Mode != filemode.Executable && file.Mode != filemode.Deprecated {
			return nil
		}
		clean := path.Clean(file.Name)
		if !filepath.IsLocal(filepath.FromSlash(clean)) {
			return fmt.Errorf("file %q leaves the repository", file.Name)
		}
		if files++; files > MaxFiles {
			return fmt.Errorf("%w: more than %d files", ErrTooLarge, MaxFiles)
		}
		if total += file.Size; total > MaxBytes {
			return fmt.Errorf("%w: more than %s of files", ErrTooLarge, size(MaxBytes))
		}
		need := blocks(file.Size)
		for d := path.Dir(clean); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			need += blockSize
		}
		if err := m.reserve(need); err != nil {
			return err
		}
		return writeFile(file, filepath.Join(dir, "tree", filepath.FromSlash(clean)))
	})
}

func writeFile(file *object.File, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	r, err := file.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	// The blob's declared size was counted against MaxBytes and reserved; the copy is held to it.
	if _, err := io.Copy(out, io.LimitReader(r, file.Size)); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// validCommit checks a commit id: 7 to 64 lowercase hex digits, as the Environment's API admits.
func validCommit(c string) error {
	if len(c) < 7 || len(c) > 64 || strings.Trim(c, "0123456789abcdef") != "" {
		return fmt.Errorf("commit id %q is not 7 to 64 lowercase hexadecimal digits", c)
	}
	return nil
}

// cacheKey names the cache entry of one commit of one repository as fetched for one namespace with one
// set of credentials: everything that decides whether a caller may see it. The name is an HMAC under the
// Fetcher's random key, so it cannot be reversed (or checked against guesses) to learn the credentials.
// A branch is part of the key only for an abbreviated id, which the branch helps resolve.
func (f *Fetcher) cacheKey(req Request) string {
	m := hmac.New(sha256.New, f.secret)
	field := func(h hash.Hash, s string) {
		_ = binary.Write(h, binary.BigEndian, uint64(len(s)))
		_, _ = io.WriteString(h, s)
	}
	field(m, "catalyst-source/v2")
	field(m, req.URL)
	field(m, req.Commit)
	field(m, req.Namespace)
	if len(req.Commit) < 40 {
		field(m, req.Branch)
	} else {
		field(m, "")
	}
	if req.Auth == nil {
		field(m, "anonymous")
	} else {
		field(m, "basic")
		field(m, req.Auth.Username)
		field(m, req.Auth.Password)
	}
	return hex.EncodeToString(m.Sum(nil)[:keyLen/2])
}
