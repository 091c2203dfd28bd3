package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
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
	// branchDepth is how deep a branch is fetched when the server cannot send a commit by its id: a
	// commit this close to the branch tip is found without the whole history.
	branchDepth = 50
)

// ErrCommitNotFound is a commit that is not on the branch fetched (nor, for a full id, fetchable by id).
var ErrCommitNotFound = errors.New("commit not found")

// Request names one commit of one repository.
type Request struct {
	// URL is the repository, any URL go-git supports (https://, http://, file://).
	URL string
	// Commit is the commit id, full (40 or 64 hex digits) or abbreviated (at least 7).
	Commit string
	// Branch is where to look for the commit when the server cannot send it by id, or the id is
	// abbreviated; every branch when empty.
	Branch string
	// Auth is the credentials, or nil for none.
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

// Fetcher fetches commits into a cache directory, at most MaxEntries of them, dropping the least
// recently used.
type Fetcher struct {
	// Dir is the cache directory; a directory under os.TempDir when empty.
	Dir string
	// MaxEntries bounds the cache; DefaultEntries when zero.
	MaxEntries int
	// CABundle is PEM certificates trusted for https besides the system's (a private Git server).
	CABundle []byte
	// Hosts, when not empty, are the only hosts fetched from (by name, without port): a Project cannot
	// make the operator send requests to any other address it can reach.
	Hosts []string

	mu    sync.Mutex
	inUse map[string]int
	// fetching serializes fetches of one key.
	fetching map[string]*sync.Mutex
}

// With fetches req's commit (or finds it in the cache) and calls fn with its checkout. The checkout is
// not evicted while fn runs.
func (f *Fetcher) With(ctx context.Context, req Request, fn func(Checkout) error) error {
	if err := validCommit(req.Commit); err != nil {
		return err
	}
	if err := f.allowed(req.URL); err != nil {
		return err
	}
	root, err := f.root()
	if err != nil {
		return err
	}
	key := cacheKey(req.URL, req.Commit)
	dir := filepath.Join(root, key)
	f.acquire(key)
	defer f.release(key)

	lock := f.keyLock(key)
	lock.Lock()
	commit, err := readMarker(dir)
	if err != nil {
		commit, err = f.fetch(ctx, req, dir)
	} else {
		now := time.Now()
		_ = os.Chtimes(dir, now, now)
	}
	lock.Unlock()
	if err != nil {
		return err
	}
	f.evict(root, key)
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

func (f *Fetcher) acquire(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inUse == nil {
		f.inUse = map[string]int{}
	}
	f.inUse[key]++
}

func (f *Fetcher) release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inUse[key]--; f.inUse[key] <= 0 {
		delete(f.inUse, key)
	}
}

func (f *Fetcher) keyLock(key string) *sync.Mutex {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fetching == nil {
		f.fetching = map[string]*sync.Mutex{}
	}
	l, ok := f.fetching[key]
	if !ok {
		l = &sync.Mutex{}
		f.fetching[key] = l
	}
	return l
}

// evict removes the least recently used checkouts beyond MaxEntries, except those in use.
func (f *Fetcher) evict(root, keep string) {
	limit := f.MaxEntries
	if limit <= 0 {
		limit = DefaultEntries
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	type entry struct {
		name string
		at   time.Time
	}
	var list []entry
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.IsDir() {
			list = append(list, entry{e.Name(), info.ModTime()})
		}
	}
	if len(list) <= limit {
		return
	}
	slices.SortFunc(list, func(a, b entry) int { return a.at.Compare(b.at) })
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range list[:len(list)-limit] {
		if e.name == keep || f.inUse[e.name] > 0 || f.inUse[strings.TrimSuffix(e.name, ".partial")] > 0 {
			continue
		}
		_ = os.RemoveAll(filepath.Join(root, e.name))
		delete(f.fetching, e.name)
	}
}

// Entries is how many checkouts the cache holds.
func (f *Fetcher) Entries() (int, error) {
	root, err := f.root()
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(root)
	return len(entries), err
}

// allowed checks the URL's host against Hosts.
func (f *Fetcher) allowed(raw string) error {
	if len(f.Hosts) == 0 {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("repository URL %q: %w", raw, err)
	}
	if !slices.Contains(f.Hosts, u.Hostname()) {
		return fmt.Errorf("repository %s: host %q is not one the operator may fetch from (%s)", raw, u.Hostname(), strings.Join(f.Hosts, ", "))
	}
	return nil
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

// fetch fetches req's commit into dir: by its id when the server allows it (one commit, depth 1), else
// the branch at depth branchDepth, else the whole branch.
func (f *Fetcher) fetch(ctx context.Context, req Request, dir string) (string, error) {
	// Each attempt starts from an empty repository: a second fetch into a shallow one would send its
	// shallow commits, which not every server takes.
	attempt := func(depth int, spec config.RefSpec) (*git.Repository, error) {
		repo, err := git.Init(memory.NewStorage(), nil)
		if err != nil {
			return nil, err
		}
		remote, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{req.URL}})
		if err != nil {
			return nil, fmt.Errorf("repository %s: %w", req.URL, err)
		}
		o := &git.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Depth: depth,
			Tags: git.NoTags, CABundle: f.CABundle}
		if req.Auth != nil {
			o.Auth = &githttp.BasicAuth{Username: req.Auth.Username, Password: req.Auth.Password}
		}
		if err := remote.FetchContext(ctx, o); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil, err
		}
		return repo, nil
	}

	var commit *object.Commit
	if plumbing.IsHash(req.Commit) {
		repo, err := attempt(1, config.RefSpec(req.Commit+":refs/heads/catalyst"))
		switch {
		case err == nil:
			if commit, err = repo.CommitObject(plumbing.NewHash(req.Commit)); err != nil {
				return "", fmt.Errorf("repository %s: commit %s: %w", req.URL, req.Commit, err)
			}
		case errors.Is(err, git.ErrExactSHA1NotSupported):
		default:
			return "", describe(req, err)
		}
	}
	if commit == nil {
		spec := config.RefSpec("+refs/heads/*:refs/remotes/origin/*")
		if req.Branch != "" {
			spec = config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", req.Branch, req.Branch))
		}
		for _, depth := range []int{branchDepth, 0} {
			repo, err := attempt(depth, spec)
			if err != nil {
				return "", describe(req, err)
			}
			if commit, err = find(repo, req.Commit); err != nil {
				return "", fmt.Errorf("repository %s: %w", req.URL, err)
			}
			if commit != nil {
				break
			}
		}
		if commit == nil {
			where := "any branch"
			if req.Branch != "" {
				where = "branch " + req.Branch
			}
			return "", fmt.Errorf("repository %s: %w: %s is not on %s", req.URL, ErrCommitNotFound, req.Commit, where)
		}
	}
	if err := write(commit, dir); err != nil {
		return "", fmt.Errorf("repository %s at %s: %w", req.URL, commit.Hash, err)
	}
	return commit.Hash.String(), nil
}

// describe turns a fetch error into one that names the repository, without credentials.
func describe(req Request, err error) error {
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("repository %s: the credentials were refused or are missing: %w", req.URL, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("repository %s: not found: %w", req.URL, err)
	}
	return fmt.Errorf("fetch %s: %w", req.URL, err)
}

// find is the fetched commit whose id starts with prefix, nil when none; an ambiguous prefix is an error.
func find(repo *git.Repository, prefix string) (*object.Commit, error) {
	iter, err := repo.CommitObjects()
	if err != nil {
		return nil, err
	}
	var found *object.Commit
	err = iter.ForEach(func(c *object.Commit) error {
		if !strings.HasPrefix(c.Hash.String(), prefix) {
			return nil
		}
		if found != nil && found.Hash != c.Hash {
			return fmt.Errorf("commit id %s is ambiguous: %s and %s", prefix, found.Hash, c.Hash)
		}
		found = c
		return nil
	})
	return found, err
}

// write writes the commit's regular files under dir/tree, then the marker. Symlinks and submodules are
// left out: a link could point outside the checkout, and a submodule is another repository.
func write(commit *object.Commit, dir string) error {
	tmp := dir + ".partial"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(filepath.Join(tmp, "tree"), 0o700); err != nil {
		return err
	}
	tree, err := commit.Tree()
	if err != nil {
		return err
	}
	files, total := 0, int64(0)
	err = tree.Files().ForEach(func(file *object.File) error {
		if file.Mode != filemode.Regular && file.Mode != filemode.Executable && file.Mode != filemode.Deprecated {
			return nil
		}
		clean := path.Clean(file.Name)
		if !filepath.IsLocal(filepath.FromSlash(clean)) {
			return fmt.Errorf("file %q leaves the repository", file.Name)
		}
		if files++; files > MaxFiles {
			return fmt.Errorf("more than %d files", MaxFiles)
		}
		if total += file.Size; total > MaxBytes {
			return fmt.Errorf("more than %d bytes", MaxBytes)
		}
		return writeFile(file, filepath.Join(tmp, "tree", filepath.FromSlash(clean)))
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, markerFile), []byte(commit.Hash.String()+"\n"), 0o600); err != nil {
		return err
	}
	_ = os.RemoveAll(dir)
	return os.Rename(tmp, dir)
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
	if _, err := io.Copy(out, r); err != nil {
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

// cacheKey names the cache entry of one commit of one repository.
func cacheKey(repo, commit string) string {
	sum := sha256.Sum256([]byte(repo + "\x00" + commit))
	return hex.EncodeToString(sum[:12])
}
