package source_test

import (
	"context"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/catalyst/source"
	"github.com/platform-operator/platform-operator/internal/catalyst/source/sourcetest"
)

// fixture is a repository with two commits on main.
type fixture struct {
	repo          *sourcetest.Repo
	first, second string
}

func newFixture(t *testing.T, root string) fixture {
	t.Helper()
	repo, err := sourcetest.Init(filepath.Join(root, "team", "app"), "main")
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{repo: repo}
	if f.first, err = repo.Commit("first", map[string]string{"deploy/a.yaml": "a: 1\n", "README.md": "hi\n"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(repo.Dir, "deploy", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if f.second, err = repo.Commit("second", map[string]string{"deploy/b.yaml": "b: 2\n"}, "deploy/a.yaml"); err != nil {
		t.Fatal(err)
	}
	return f
}

func serve(t *testing.T, root string, s *sourcetest.Server) *sourcetest.Server {
	t.Helper()
	s.Root = root
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// files lists a checkout's files, relative and slash-separated.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// local lists the test servers' address: tests reach them only because they say so, as an operator would
// for a private Git server.
var local = []string{"127.0.0.1"}

func TestFetch(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	open := serve(t, root, &sourcetest.Server{})
	byID := serve(t, root, &sourcetest.Server{SHA1InWant: true})
	authed := serve(t, root, &sourcetest.Server{Username: source.TokenUser, Password: "s3cret"})

	tests := []struct {
		name    string
		srv     *sourcetest.Server
		url     string // instead of srv's
		commit  string
		branch  string
		auth    *source.Auth
		hosts   []string // local when nil
		want    []string
		wantErr string
	}{
		{name: "by id, server allows it", srv: byID, commit: fx.first, want: []string{"README.md", "deploy/a.yaml"}},
		{name: "by branch, server refuses ids", srv: open, commit: fx.first, branch: "main", want: []string{"README.md", "deploy/a.yaml"}},
		{name: "abbreviated id on every branch", srv: open, commit: fx.second[:7], want: []string{"README.md", "deploy/b.yaml"}},
		{name: "abbreviated id on its branch", srv: byID, commit: fx.second[:7], branch: "main", want: []string{"README.md", "deploy/b.yaml"}},
		{name: "symlinks are left out", srv: byID, commit: fx.second, want: []string{"README.md", "deploy/b.yaml"}},
		{name: "file url", url: "file://" + fx.repo.Dir, commit: fx.second, branch: "main", wantErr: `scheme "file" is not fetched, only https`},
		{name: "token", srv: authed, commit: fx.second, auth: &source.Auth{Username: source.TokenUser, Password: "s3cret"}, want: []string{"README.md", "deploy/b.yaml"}},
		{name: "wrong token", srv: authed, commit: fx.second, auth: &source.Auth{Username: source.TokenUser, Password: "wrong-token"}, wantErr: "credentials were refused or are missing"},
		{name: "no token", srv: authed, commit: fx.second, wantErr: "credentials were refused or are missing"},
		{name: "unknown commit", srv: open, commit: "0123456789abcdef0123456789abcdef01234567", branch: "main", wantErr: "is not on branch main"},
		{name: "unknown branch", srv: open, commit: fx.first, branch: "nope", wantErr: `branch "nope" not found`},
		{name: "missing repository", url: "https://127.0.0.1:1/none", commit: fx.first, wantErr: "127.0.0.1:1/none"},
		{name: "not a commit id", srv: open, commit: "HEAD~1", wantErr: "not 7 to 64 lowercase hexadecimal digits"},
		{name: "host not allowed", url: "https://github.com/org/repo", commit: fx.first, wantErr: `host "github.com" is not one the operator may fetch from (127.0.0.1)`},
		{name: "credentials in the url", url: "https://user:s3cret@127.0.0.1:1/none", commit: fx.first, wantErr: "carries credentials in its URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts := tt.hosts
			if hosts == nil {
				hosts = local
			}
			f := &source.Fetcher{Dir: t.TempDir(), Hosts: hosts}
			url := tt.url
			if tt.srv != nil {
				f.CABundle = tt.srv.CABundle()
				url = tt.srv.URL(fx.repo.Dir)
			}
			var got []string
			var commit string
			err := f.With(context.Background(), source.Request{URL: url, Commit: tt.commit, Branch: tt.branch, Auth: tt.auth},
				func(c source.Checkout) error {
					got, commit = files(t, c.Dir), c.Commit
					return nil
				})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong-token") {
					t.Fatalf("error %q shows the credentials", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("files = %v, want %v", got, tt.want)
			}
			if !strings.HasPrefix(commit, tt.commit) || len(commit) != 40 {
				t.Errorf("commit = %q, want the full id of %q", commit, tt.commit)
			}
			// The checkout keeps the tree only: the fetched objects are gone once it is written.
			if _, err := os.Stat(filepath.Join(filepath.Dir(c(t, f)), ".git")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the cache entry keeps the fetched repository: %v", err)
			}
		})
	}
}

// c is the only cache entry of f.
func c(t *testing.T, f *source.Fetcher) string {
	t.Helper()
	entries, err := os.ReadDir(f.Dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache holds %d entries (err %v), want 1", len(entries), err)
	}
	return filepath.Join(f.Dir, entries[0].Name(), "tree")
}

func TestFetchCommitNotFoundIsTyped(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	srv := serve(t, root, &sourcetest.Server{})
	f := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle()}
	err := f.With(context.Background(), source.Request{URL: srv.URL(fx.repo.Dir), Commit: "abcdef0"}, func(source.Checkout) error { return nil })
	if !errors.Is(err, source.ErrCommitNotFound) {
		t.Fatalf("error = %v, want ErrCommitNotFound", err)
	}
}

// TestCacheBounded: the cache keeps at most MaxEntries checkouts, serves a cached commit without the
// repository, and never evicts the checkout a caller is reading.
func TestCacheBounded(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	third, err := fx.repo.Commit("third", map[string]string{"deploy/c.yaml": "c: 3\n"})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, root, &sourcetest.Server{SHA1InWant: true})
	url := srv.URL(fx.repo.Dir)
	f := &source.Fetcher{Dir: t.TempDir(), MaxEntries: 2, Hosts: local, CABundle: srv.CABundle()}
	ctx := context.Background()
	noop := func(source.Checkout) error { return nil }
	if err := f.With(ctx, source.Request{URL: url, Commit: fx.first}, func(c source.Checkout) error {
		// Two more commits while the first is read: the first stays.
		for _, sha := range []string{fx.second, third} {
			if err := f.With(ctx, source.Request{URL: url, Commit: sha}, noop); err != nil {
				return err
			}
		}
		if _, err := os.Stat(filepath.Join(c.Dir, "deploy", "a.yaml")); err != nil {
			t.Errorf("the checkout in use was evicted: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.With(ctx, source.Request{URL: url, Commit: third}, noop); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Entries(); err != nil || n > 2 {
		t.Errorf("cache holds %d entries (err %v), want at most 2", n, err)
	}
	if entries, _ := os.ReadDir(f.Dir); len(entries) > 2 {
		t.Errorf("cache directory holds %d entries, want at most 2 (nothing left over by eviction)", len(entries))
	}
	// Cached: served even when the repository is gone.
	if err := os.RemoveAll(fx.repo.Dir); err != nil {
		t.Fatal(err)
	}
	if err := f.With(ctx, source.Request{URL: url, Commit: third}, func(c source.Checkout) error {
		if c.Commit != third {
			t.Errorf("commit = %s, want %s", c.Commit, third)
		}
		return nil
	}); err != nil {
		t.Fatalf("a cached commit needed the repository: %v", err)
	}
}

// TestCacheKeyedByCredentialsAndNamespace: a commit fetched with credentials is served from the cache
// only to the same namespace with the same credentials; any other request fetches for itself, and the
// server decides.
func TestCacheKeyedByCredentialsAndNamespace(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	srv := serve(t, root, &sourcetest.Server{Username: source.TokenUser, Password: "s3cret", SHA1InWant: true})
	f := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle()}
	ctx := context.Background()
	token := &source.Auth{Username: source.TokenUser, Password: "s3cret"}
	fetch := func(req source.Request) error {
		req.URL, req.Commit = srv.URL(fx.repo.Dir), fx.second
		return f.With(ctx, req, func(c source.Checkout) error {
			if _, err := os.Stat(filepath.Join(c.Dir, "deploy", "b.yaml")); err != nil {
				t.Errorf("checkout lacks deploy/b.yaml: %v", err)
			}
			return nil
		})
	}
	if err := fetch(source.Request{Namespace: "team-a", Auth: token}); err != nil {
		t.Fatal(err)
	}

	// Positive control: the same namespace with the same credentials is served without the network.
	before := srv.Requests()
	if err := fetch(source.Request{Namespace: "team-a", Auth: &source.Auth{Username: source.TokenUser, Password: "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("a cached commit cost %d requests, want 0", n)
	}

	tests := []struct {
		name    string
		req     source.Request
		wantErr string
	}{
		{name: "no credentials, same namespace", req: source.Request{Namespace: "team-a"}, wantErr: "credentials were refused or are missing"},
		{name: "other credentials, same namespace", req: source.Request{Namespace: "team-a", Auth: &source.Auth{Username: source.TokenUser, Password: "guess"}}, wantErr: "credentials were refused or are missing"},
		{name: "other user, same password", req: source.Request{Namespace: "team-a", Auth: &source.Auth{Username: "someone", Password: "s3cret"}}, wantErr: "credentials were refused or are missing"},
		{name: "no credentials, other namespace", req: source.Request{Namespace: "team-b"}, wantErr: "credentials were refused or are missing"},
		// The same credentials in another namespace are that namespace's own: it fetches for itself.
		{name: "same credentials, other namespace", req: source.Request{Namespace: "team-b", Auth: token}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Requests()
			err := fetch(tt.req)
			if srv.Requests() == before {
				t.Errorf("served from another request's cache entry without asking the server")
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}

	// Entry names reveal nothing: they differ between Fetchers (the HMAC key is each one's own) and never
	// hold the credentials.
	other := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle()}
	if err := other.With(ctx, source.Request{URL: srv.URL(fx.repo.Dir), Commit: fx.second, Namespace: "team-a", Auth: token},
		func(source.Checkout) error { return nil }); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, dir := range []string{f.Dir, other.Dir} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.Contains(e.Name(), "s3cret") || names[e.Name()] {
				t.Errorf("entry %s is named after its credentials or named alike by two Fetchers", e.Name())
			}
			names[e.Name()] = true
		}
	}
}

// TestFetchByteLimit: a repository larger than MaxFetchBytes is refused while it is received, and leaves
// nothing in the cache; under a limit it fits, the same repository is fetched.
func TestFetchByteLimit(t *testing.T) {
	root := t.TempDir()
	repo, err := sourcetest.Init(filepath.Join(root, "team", "big"), "main")
	if err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 256<<10)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	commit, err := repo.Commit("big", map[string]string{"blob.bin": string(noise)})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, root, &sourcetest.Server{SHA1InWant: true})
	req := source.Request{URL: srv.URL(repo.Dir), Commit: commit}

	small := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle(), MaxFetchBytes: 64 << 10}
	err = small.With(context.Background(), req, func(source.Checkout) error { return nil })
	if !errors.Is(err, source.ErrTooLarge) || !strings.Contains(err.Error(), "the server sent more than 64 KiB") {
		t.Fatalf("error = %v, want ErrTooLarge saying the server sent more than 64 KiB", err)
	}
	if entries, err := os.ReadDir(small.Dir); err != nil || len(entries) != 0 {
		t.Errorf("the failed fetch left %d entries (err %v), want none", len(entries), err)
	}

	enough := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle(), MaxFetchBytes: 1 << 20}
	if err := enough.With(context.Background(), req, func(c source.Checkout) error {
		b, err := os.ReadFile(filepath.Join(c.Dir, "blob.bin"))
		if err != nil || len(b) != len(noise) {
			t.Errorf("blob.bin has %d bytes (err %v), want %d", len(b), err, len(noise))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestStalledServer: a server that stops answering fails its fetch with a timeout, and fetches of other
// keys go on meanwhile.
func TestStalledServer(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	stalled := serve(t, root, &sourcetest.Server{Stall: true})
	healthy := serve(t, root, &sourcetest.Server{SHA1InWant: true})
	// Both servers share the certificate, so one bundle trusts both.
	f := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: healthy.CABundle(), Timeout: 5 * time.Second}
	ctx := context.Background()
	noop := func(source.Checkout) error { return nil }

	stalledErr := make(chan error, 1)
	go func() {
		stalledErr <- f.With(ctx, source.Request{URL: stalled.URL(fx.repo.Dir), Commit: fx.first}, noop)
	}()
	for stalled.Requests() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.With(ctx, source.Request{URL: healthy.URL(fx.repo.Dir), Commit: fx.first}, noop); err != nil {
		t.Fatalf("a healthy fetch failed while another was stalled: %v", err)
	}
	select {
	case err := <-stalledErr:
		t.Fatalf("the stalled fetch ended (%v) before the healthy one was done: the healthy one waited for it", err)
	default:
	}
	err := <-stalledErr
	if !errors.Is(err, source.ErrTimedOut) || !strings.Contains(err.Error(), "not done within 5s") {
		t.Fatalf("stalled fetch error = %v, want ErrTimedOut after 5s", err)
	}
	if n, _ := f.Entries(); n != 1 {
		t.Errorf("cache holds %d checkouts, want the healthy one only", n)
	}
}

// TestWaiterGivesUp: a caller waiting for another's fetch of the same key gives up with its context.
func TestWaiterGivesUp(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	stalled := serve(t, root, &sourcetest.Server{Stall: true})
	f := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: stalled.CABundle()}
	req := source.Request{URL: stalled.URL(fx.repo.Dir), Commit: fx.first}
	first, cancelFirst := context.WithCancel(context.Background())
	defer cancelFirst()
	firstErr := make(chan error, 1)
	go func() { firstErr <- f.With(first, req, func(source.Checkout) error { return nil }) }()
	for stalled.Requests() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	second, cancelSecond := context.WithCancel(context.Background())
	cancelSecond()
	if err := f.With(second, req, func(source.Checkout) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("waiting caller's error = %v, want context.Canceled", err)
	}
	cancelFirst()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("fetching caller's error = %v, want context.Canceled", err)
	}
}

// TestHostRules: with no hosts listed, the operator fetches only from public addresses, checked on the
// address it connects to; a listed host is fetched from wherever it is.
func TestHostRules(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	srv := serve(t, root, &sourcetest.Server{SHA1InWant: true})
	tests := []struct {
		name    string
		url     string
		hosts   []string
		wantErr string
	}{
		{name: "loopback address, nothing listed", url: srv.URL(fx.repo.Dir), wantErr: "127.0.0.1 is a loopback address"},
		{name: "loopback address, listed", url: srv.URL(fx.repo.Dir), hosts: []string{"127.0.0.1"}},
		{name: "name resolving to loopback, nothing listed", url: srv.LocalhostURL(fx.repo.Dir), wantErr: `host "localhost" resolves to`},
		{name: "name resolving to loopback, listed", url: srv.LocalhostURL(fx.repo.Dir), hosts: []string{"LocalHost"}},
		{name: "name resolving to loopback, another listed", url: srv.LocalhostURL(fx.repo.Dir), hosts: []string{"127.0.0.1"}, wantErr: `host "localhost" is not one the operator may fetch from`},
		{name: "cloud metadata", url: "https://169.254.169.254/latest/meta-data", wantErr: "169.254.169.254 is a link-local address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &source.Fetcher{Dir: t.TempDir(), Hosts: tt.hosts, CABundle: srv.CABundle()}
			before := srv.Requests()
			err := f.With(context.Background(), source.Request{URL: tt.url, Commit: fx.first}, func(c source.Checkout) error {
				if _, err := os.Stat(filepath.Join(c.Dir, "deploy", "a.yaml")); err != nil {
					t.Errorf("checkout lacks deploy/a.yaml: %v", err)
				}
				return nil
			})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, source.ErrURLNotAllowed) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want ErrURLNotAllowed containing %q", err, tt.wantErr)
			}
			if n := srv.Requests() - before; n != 0 {
				t.Errorf("a refused URL reached the server with %d requests", n)
			}
		})
	}
}

// TestRedirectFollowsHostRules: a listed server that redirects elsewhere does not take the operator to
// an unlisted host.
func TestRedirectFollowsHostRules(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	target := serve(t, root, &sourcetest.Server{SHA1InWant: true})
	redirect := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.LocalhostURL(fx.repo.Dir)+strings.TrimPrefix(r.URL.RequestURI(), "/team/app"), http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	pool := append(target.CABundle(), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: redirect.Certificate().Raw})...)
	for _, tt := range []struct {
		name    string
		hosts   []string
		wantErr string
	}{
		{name: "redirect to an unlisted host", hosts: []string{"127.0.0.1"}, wantErr: `host "localhost" is not one the operator may fetch from`},
		{name: "redirect to a listed host", hosts: []string{"127.0.0.1", "localhost"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &source.Fetcher{Dir: t.TempDir(), Hosts: tt.hosts, CABundle: pool}
			before := target.Requests()
			err := f.With(context.Background(), source.Request{URL: redirect.URL + "/team/app", Commit: fx.first}, func(source.Checkout) error { return nil })
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if target.Requests() == before {
					t.Error("the redirect was not followed")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if n := target.Requests() - before; n != 0 {
				t.Errorf("the redirect reached the unlisted host with %d requests", n)
			}
		})
	}
}
