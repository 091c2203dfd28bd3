package source_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		hosts   []string
		want    []string
		wantErr string
	}{
		{name: "by id, server allows it", srv: byID, commit: fx.first, want: []string{"README.md", "deploy/a.yaml"}},
		{name: "by branch, server refuses ids", srv: open, commit: fx.first, branch: "main", want: []string{"README.md", "deploy/a.yaml"}},
		{name: "abbreviated id on every branch", srv: open, commit: fx.second[:7], want: []string{"README.md", "deploy/b.yaml"}},
		{name: "symlinks are left out", srv: byID, commit: fx.second, want: []string{"README.md", "deploy/b.yaml"}},
		{name: "file url", url: "file://" + fx.repo.Dir, commit: fx.second, branch: "main", want: []string{"README.md", "deploy/b.yaml"}},
		{name: "token", srv: authed, commit: fx.second, auth: &source.Auth{Username: source.TokenUser, Password: "s3cret"}, want: []string{"README.md", "deploy/b.yaml"}},
		{name: "wrong token", srv: authed, commit: fx.second, auth: &source.Auth{Username: source.TokenUser, Password: "wrong-token"}, wantErr: "credentials were refused or are missing"},
		{name: "no token", srv: authed, commit: fx.second, wantErr: "credentials were refused or are missing"},
		{name: "unknown commit", srv: open, commit: "0123456789abcdef0123456789abcdef01234567", branch: "main", wantErr: "is not on branch main"},
		{name: "unknown branch", srv: open, commit: fx.first, branch: "nope", wantErr: "fetch"},
		{name: "missing repository", url: "https://127.0.0.1:1/none", commit: fx.first, wantErr: "127.0.0.1:1/none"},
		{name: "not a commit id", srv: open, commit: "HEAD~1", wantErr: "not 7 to 64 lowercase hexadecimal digits"},
		{name: "host not allowed", url: "https://github.com/org/repo", hosts: []string{"127.0.0.1"}, commit: fx.first, wantErr: `host "github.com" is not one the operator may fetch from (127.0.0.1)`},
		{name: "host allowed", srv: byID, hosts: []string{"127.0.0.1"}, commit: fx.first, want: []string{"README.md", "deploy/a.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &source.Fetcher{Dir: t.TempDir(), Hosts: tt.hosts}
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
		})
	}
}

func TestFetchCommitNotFoundIsTyped(t *testing.T) {
	root := t.TempDir()
	fx := newFixture(t, root)
	f := &source.Fetcher{Dir: t.TempDir()}
	err := f.With(context.Background(), source.Request{URL: "file://" + fx.repo.Dir, Commit: "abcdef0"}, func(source.Checkout) error { return nil })
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
	url := "file://" + fx.repo.Dir
	f := &source.Fetcher{Dir: t.TempDir(), MaxEntries: 2}
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
