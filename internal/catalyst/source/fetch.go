package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Bounds on one fetch's HTTP exchange and on the pack it receives, besides Fetcher.MaxFetchBytes and
// Fetcher.Timeout: each keeps what a hostile server can make the operator hold in memory small.
const (
	// MaxObjects is the most objects one received pack may hold: the pack's index is kept in memory while
	// it is read.
	MaxObjects = 500000
	// MaxObjectBytes is the largest object (a file, once inflated) a pack may hold: objects are inflated
	// in memory to resolve deltas, and a few compressed bytes can declare gigabytes.
	MaxObjectBytes = 64 << 20
	// maxRefsBytes bounds the server's reference list, which is decoded in memory.
	maxRefsBytes = 32 << 20
	// maxErrorBytes bounds the body of an error response, which go-git reads whole into its message.
	maxErrorBytes = 4 << 10
	// tlsHandshakeTimeout and responseHeaderTimeout bound a server that accepts a connection and then
	// says nothing; Fetcher.Timeout bounds the whole fetch.
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 30 * time.Second
	// objectCacheBytes is the cache of inflated objects while the tree is written; largeObjectBytes is the
	// size from which a stored object is streamed from its pack rather than read into memory.
	objectCacheBytes = 16 << 20
	largeObjectBytes = 1 << 20
	// gitSkeletonBytes is what a fetch's repository holds besides its pack: config, HEAD, shallow and
	// their directories, counted in whole blocks.
	gitSkeletonBytes = 16 * blockSize
)

// ErrTooLarge is a repository beyond one of the fetch's limits (bytes received, objects, object size,
// files or bytes written).
var ErrTooLarge = errors.New("repository too large")

// ErrTimedOut is a fetch that did not finish within Fetcher.Timeout.
var ErrTimedOut = errors.New("fetch timed out")

// fetchState is what one fetch's HTTP exchange counts and why it was stopped, when it was: go-git
// reports a transport's failure as text, so the cause is kept here to be reported as it is.
type fetchState struct {
	limit    int64
	received atomic.Int64

	mu    sync.Mutex
	cause error
}

// fail records err as the fetch's cause, unless one is recorded already, and returns it.
func (s *fetchState) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cause == nil {
		s.cause = err
	}
	return err
}

func (s *fetchState) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause
}

// meteredTransport bounds the bodies of one fetch's responses: all of them together by the fetch's byte
// limit, the reference list by maxRefsBytes, an error's by maxErrorBytes.
type meteredTransport struct {
	base http.RoundTripper
	st   *fetchState
}

func (t *meteredTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		res.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(res.Body, maxErrorBytes), res.Body}
		return res, nil
	}
	b := &meteredBody{rc: res.Body, st: t.st}
	if r.Method == http.MethodGet {
		b.own = maxRefsBytes
	}
	res.Body = b
	return res, nil
}

type meteredBody struct {
	rc  io.ReadCloser
	st  *fetchState
	own int64 // This response's own limit; none when zero.
	n   int64
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.own > 0 && b.n > b.own {
		return n, b.st.fail(fmt.Errorf("%w: the server's list of references is larger than %s", ErrTooLarge, size(b.own)))
	}
	if total := b.st.received.Add(int64(n)); total > b.st.limit {
		return n, b.st.fail(fmt.Errorf("%w: the server sent more than %s (the fetch limit)", ErrTooLarge, size(b.st.limit)))
	}
	return n, err
}

func (b *meteredBody) Close() error { return b.rc.Close() }

// size shows a byte count the way the limits are written.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// tlsConfig is the TLS settings of every fetch: the system's roots plus CABundle.
func tlsConfig(bundle []byte) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(bundle) == 0 {
		return c, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(bundle) {
		return nil, errors.New("source: the CA bundle holds no PEM certificate")
	}
	c.RootCAs = pool
	return c, nil
}

// session opens an upload-pack session for one fetch, on a transport of its own: its dialer applies the
// host rules, its bodies are metered into st, and nothing is shared with another fetch but the TLS roots.
// close releases its connections.
func (f *Fetcher) session(req Request, st *fetchState) (sess transport.UploadPackSession, closeFn func(), err error) {
	tr := &http.Transport{
		DialContext:            f.dialer(st),
		TLSClientConfig:        f.tls.Clone(),
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		ResponseHeaderTimeout:  responseHeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
		// No proxy: the host rules are checked on the address connected to, which a proxy would hide.
		Proxy: nil,
	}
	client := &http.Client{
		Transport: &meteredTransport{base: tr, st: st},
		// go-git follows only the first request's redirects; where they lead must pass the same rules.
		CheckRedirect: func(r *http.Request, _ []*http.Request) error { return f.Allowed(r.URL.String()) },
	}
	ep, err := transport.NewEndpoint(req.URL)
	if err != nil {
		return nil, nil, err
	}
	var auth transport.AuthMethod
	if req.Auth != nil {
		auth = &githttp.BasicAuth{Username: req.Auth.Username, Password: req.Auth.Password}
	}
	c := githttp.NewClientWithOptions(client, &githttp.ClientOptions{RedirectPolicy: githttp.FollowInitialRedirects})
	sess, err = c.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, nil, err
	}
	return sess, func() { _ = sess.Close(); tr.CloseIdleConnections() }, nil
}

// fetch fetches req's commit into dir: by its id when the server allows it (one commit, depth 1), else
// the branch at depth branchDepth, else the whole branch. Objects are received into a repository on disk
// next to the tree, which is dropped once the tree is written; nothing is left behind on failure.
//
// Every byte it writes is reserved in the cache's budget first (meter), so a repository too large for
// the budget is stopped at the byte beyond it, not once it is written; what it leaves on failure is
// removed before its reservation is given back.
func (f *Fetcher) fetch(ctx context.Context, req Request, key, dir string) (_ string, err error) {
	tmp := dir + ".partial"
	m := &meter{f: f, root: filepath.Dir(dir)}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
		m.settle(key, err == nil)
	}()
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("source cache: %w", err)
	}
	// The checkout's directories and its marker file.
	if err := m.reserve(3 * blockSize); err != nil {
		return "", fmt.Errorf("repository %s: %w", req.URL, err)
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", fmt.Errorf("source cache: %w", err)
	}
	fctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	st := &fetchState{limit: f.maxFetchBytes()}
	commit, err := f.receive(fctx, req, tmp, st, m)
	if err != nil {
		return "", f.explain(ctx, fctx, req, st, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, markerFile), []byte(commit+"\n"), 0o600); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("source cache: %w", err)
	}
	return commit, nil
}

// explain turns a failed fetch's error into one that says why, naming the repository without credentials.
func (f *Fetcher) explain(parent, fctx context.Context, req Request, st *fetchState, err error) error {
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("fetch %s: %w", req.URL, perr)
	}
	if cause := st.failure(); cause != nil {
		return fmt.Errorf("repository %s: %w", req.URL, cause)
	}
	if errors.Is(fctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("repository %s: %w: not done within %s", req.URL, ErrTimedOut, f.timeout())
	}
	return describe(req, err)
}

// receive fetches the commit into tmp/.git and writes its tree to tmp/tree; it returns the full id.
func (f *Fetcher) receive(ctx context.Context, req Request, tmp string, st *fetchState, m *meter) (string, error) {
	sess, done, err := f.session(req, st)
	if err != nil {
		return "", err
	}
	defer done()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return "", err
	}
	gitDir := filepath.Join(tmp, ".git")
	var store *filesystem.Storage
	defer func() {
		if store != nil {
			_ = store.Close()
		}
	}()
	attempt := func(depth int, wants []plumbing.Hash) error {
		if store != nil {
			_ = store.Close()
		}
		// Each attempt starts from an empty repository: a second fetch into a shallow one would send its
		// shallow commits, which not every server takes.
		if err := os.RemoveAll(gitDir); err != nil {
			return err
		}
		m.releaseGit(m.git)
		// The repository's own files (config, HEAD, shallow) and directories.
		if err := m.reserveGit(gitSkeletonBytes); err != nil {
			return err
		}
		store = filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRU(objectCacheBytes),
			filesystem.Options{ExclusiveAccess: true, LargeObjectThreshold: largeObjectBytes})
		return receivePack(ctx, sess, ar, store, tmp, depth, wants, m)
	}

	var commit *object.Commit
	if plumbing.IsHash(req.Commit) && (ar.Capabilities.Supports(capability.AllowReachableSHA1InWant) ||
		ar.Capabilities.Supports(capability.AllowTipSHA1InWant)) {
		want := plumbing.NewHash(req.Commit)
		if err := attempt(1, []plumbing.Hash{want}); err != nil {
			return "", err
		}
		if commit, err = object.GetCommit(store, want); err != nil {
			return "", fmt.Errorf("commit %s: %w", req.Commit, err)
		}
	}
	if commit == nil {
		wants, err := branchHeads(ar, req.Branch)
		if err != nil {
			return "", err
		}
		for _, depth := range []int{branchDepth, 0} {
			if err := attempt(depth, wants); err != nil {
				return "", err
			}
			if commit, err = find(store, req.Commit); err != nil {
				return "", err
			}
			if commit != nil {
				break
			}
			if shallow, err := store.Shallow(); err == nil && len(shallow) == 0 {
				break // The whole history is here already.
			}
		}
		if commit == nil {
			where := "any branch"
			if req.Branch != "" {
				where = "branch " + req.Branch
			}
			return "", fmt.Errorf("%w: %s is not on %s", ErrCommitNotFound, req.Commit, where)
		}
	}
	if err := write(ctx, commit, tmp, m); err != nil {
		return "", fmt.Errorf("at %s: %w", commit.Hash, err)
	}
	_ = store.Close()
	store = nil
	if err := os.RemoveAll(gitDir); err != nil {
		return "", err
	}
	m.releaseGit(m.git)
	return commit.Hash.String(), nil
}

// branchHeads is the commits the branch points to, or every branch when branch is empty.
func branchHeads(ar *packp.AdvRefs, branch string) ([]plumbing.Hash, error) {
	refs, err := ar.AllReferences()
	if err != nil {
		return nil, err
	}
	seen := map[plumbing.Hash]bool{}
	var wants []plumbing.Hash
	for name, ref := range refs {
		if ref.Type() != plumbing.HashReference || !name.IsBranch() {
			continue
		}
		if branch != "" && name != plumbing.NewBranchReferenceName(branch) {
			continue
		}
		if !seen[ref.Hash()] {
			seen[ref.Hash()] = true
			wants = append(wants, ref.Hash())
		}
	}
	if len(wants) == 0 {
		if branch != "" {
			return nil, fmt.Errorf("branch %q not found", branch)
		}
		return nil, errors.New("the repository has no branch")
	}
	return wants, nil
}

// receivePack asks for wants (at depth, when not zero) and stores the pack the server sends: first into a
// file, which is checked against MaxObjects and MaxObjectBytes without inflating anything into memory,
// then into store.
func receivePack(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, store *filesystem.Storage,
	tmp string, depth int, wants []plumbing.Hash, m *meter) error {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	// Without haves, a thin pack has nothing to be thin against; asking for none keeps every delta's base
	// in the pack.
	req.Capabilities.Delete(capability.ThinPack)
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	if depth > 0 {
		req.Depth = packp.DepthCommits(depth)
		_ = req.Capabilities.Set(capability.Shallow)
	}
	req.Wants = wants
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Close()
	if len(resp.Shallows) > 0 {
		if err := store.SetShallow(resp.Shallows); err != nil {
			return err
		}
	}
	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}

	file, err := os.Create(filepath.Join(tmp, "incoming.pack"))
	if err != nil {
		return err
	}
	// The incoming pack is reserved as it arrives, so a pack beyond the budget stops the fetch there.
	var received int64
	defer func() {
		_ = file.Close()
		if os.Remove(file.Name()) == nil {
			m.releaseGit(received)
		}
	}()
	received, err = io.Copy(meteredWriter{w: file, reserve: m.reserveGit}, pack)
	if err != nil {
		return err
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	count, err := checkPack(file)
	if err != nil {
		return err
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	// The repository stores the pack again, with its index (a fixed part and some 28 bytes an object).
	if err := m.reserveGit(blocks(received) + blocks(int64(count)*32+8192)); err != nil {
		return err
	}
	return packfile.UpdateObjectStorage(store, file)
}

// checkPack reads a pack's object headers (and each delta's first bytes, which declare its result's
// size) and refuses more than MaxObjects objects or one larger than MaxObjectBytes. go-git's scanner
// holds each object to the size its header declares, so the declared sizes bound what reading the pack
// later inflates.
func checkPack(r io.Reader) (uint32, error) {
	s := packfile.NewScanner(r)
	_, count, err := s.Header()
	if err != nil {
		return 0, err
	}
	if count > MaxObjects {
		return 0, fmt.Errorf("%w: the pack holds %d objects, more than %d", ErrTooLarge, count, MaxObjects)
	}
	for range count {
		h, err := s.NextObjectHeader()
		if err != nil {
			return 0, err
		}
		n := h.Length
		if h.Type == plumbing.OFSDeltaObject || h.Type == plumbing.REFDeltaObject {
			head := &headWriter{}
			if _, _, err := s.NextObject(head); err != nil {
				return 0, err
			}
			if n, err = deltaTarget(head.buf); err != nil {
				return 0, err
			}
		}
		if n > MaxObjectBytes {
			return 0, fmt.Errorf("%w: the pack holds an object of %d bytes, more than %s", ErrTooLarge, n, size(MaxObjectBytes))
		}
	}
	return count, nil
}

// headWriter keeps the first bytes written to it and discards the rest.
type headWriter struct{ buf []byte }

func (w *headWriter) Write(p []byte) (int, error) {
	if room := 2*binary.MaxVarintLen64 - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// deltaTarget is the size a delta declares for its result: its second varint, after the base's size.
func deltaTarget(head []byte) (int64, error) {
	_, n := binary.Uvarint(head)
	if n <= 0 {
		return 0, errors.New("invalid delta header")
	}
	target, m := binary.Uvarint(head[n:])
	if m <= 0 || target > 1<<62 {
		return 0, errors.New("invalid delta header")
	}
	return int64(target), nil
}

// describe turns a fetch error into one that names the repository, without credentials.
func describe(req Request, err error) error {
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("repository %s: the credentials were refused or are missing: %w", req.URL, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("repository %s: not found: %w", req.URL, err)
	case errors.Is(err, ErrCommitNotFound), errors.Is(err, ErrTooLarge):
		return fmt.Errorf("repository %s: %w", req.URL, err)
	}
	return fmt.Errorf("fetch %s: %w", req.URL, err)
}

// find is the fetched commit whose id starts with prefix, nil when none; an ambiguous prefix is an error.
func find(store *filesystem.Storage, prefix string) (*object.Commit, error) {
	iter, err := store.IterEncodedObjects(plumbing.CommitObject)
	if err != nil {
		return nil, err
	}
	commits := object.NewCommitIter(store, iter)
	defer commits.Close()
	var found *object.Commit
	err = commits.ForEach(func(c *object.Commit) error {
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
