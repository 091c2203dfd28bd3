package source_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/catalyst/source"
	"github.com/platform-operator/platform-operator/internal/catalyst/source/sourcetest"
)

// diskUsage is what dir takes on disk: the blocks of every file and directory under it, as du counts.
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // Removed while walked.
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// peakUsage samples dir's disk usage until stop is called, and returns the highest it saw.
func peakUsage(dir string) (stop func() int64) {
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if u := diskUsage(dir); u > peak.Load() {
				peak.Store(u)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() int64 { close(done); wg.Wait(); return peak.Load() }
}

func noise(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCacheByteBudget: a checkout that needs more than the cache's byte budget fails as it crosses it,
// saying so, and the cache's directory never holds more than the budget, not even while the fetch runs;
// the same repository under a larger budget is fetched.
func TestCacheByteBudget(t *testing.T) {
	root := t.TempDir()
	repo, err := sourcetest.Init(filepath.Join(root, "team", "big"), "main")
	if err != nil {
		t.Fatal(err)
	}
	// Random bytes do not compress: the pack, the repository and the tree each hold about 2 MiB.
	commit, err := repo.Commit("big", map[string]string{"blob.bin": noise(t, 2<<20)})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, root, &sourcetest.Server{SHA1InWant: true})
	req := source.Request{URL: srv.URL(repo.Dir), Commit: commit}
	noop := func(source.Checkout) error { return nil }

	const budget = 1 << 20
	small := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle(), MaxCacheBytes: budget}
	stop := peakUsage(small.Dir)
	err = small.With(context.Background(), req, noop)
	peak := stop()
	if !errors.Is(err, source.ErrTooLarge) || !strings.Contains(err.Error(), "exceeds the Git cache budget of 1 MiB") {
		t.Fatalf("error = %v, want ErrTooLarge saying the checkout exceeds the Git cache budget of 1 MiB", err)
	}
	// The directory itself is one block, which the budget does not count.
	if peak > budget+4096 {
		t.Errorf("the cache directory held %d bytes while fetching, more than the budget of %d", peak, budget)
	}
	t.Logf("refused fetch: peak %d bytes on disk under a budget of %d", peak, budget)
	if u := small.Used(); u != 0 {
		t.Errorf("the failed fetch still counts %d bytes", u)
	}
	if entries, _ := os.ReadDir(small.Dir); len(entries) != 0 {
		t.Errorf("the failed fetch left %d entries, want none", len(entries))
	}

	// Control: the same repository under a budget it fits in.
	const enough = 8 << 20
	large := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle(), MaxCacheBytes: enough}
	stop = peakUsage(large.Dir)
	err = large.With(context.Background(), req, func(c source.Checkout) error {
		b, err := os.ReadFile(filepath.Join(c.Dir, "blob.bin"))
		if err != nil || len(b) != 2<<20 {
			t.Errorf("blob.bin has %d bytes (err %v)", len(b), err)
		}
		return nil
	})
	peak = stop()
	if err != nil {
		t.Fatal(err)
	}
	if peak > enough {
		t.Errorf("peak %d bytes on disk, over the budget %d", peak, enough)
	}
	// What is counted is at least what is on disk (the count is what the budget holds to).
	if du, used := diskUsage(large.Dir)-4096, large.Used(); du > used {
		t.Errorf("the cache counts %d bytes but holds %d on disk", used, du)
	}
	t.Logf("accepted fetch: peak %d bytes on disk, %d counted after", peak, large.Used())
}

// TestCacheByteBudgetEvictsLRU: a fetch that needs room evicts the least recently used checkout, never
// one in use; when only checkouts in use could make room, it fails saying so.
func TestCacheByteBudgetEvictsLRU(t *testing.T) {
	root := t.TempDir()
	// One repository per checkout, one blob each: a fetch holds its blob twice at most (the incoming pack
	// and the repository, then the repository and the tree), a checkout once.
	const blob = 512 << 10
	urls := map[string]string{}
	var commits []string
	var srv *sourcetest.Server
	for _, name := range []string{"a", "b", "c"} {
		repo, err := sourcetest.Init(filepath.Join(root, "team", name), "main")
		if err != nil {
			t.Fatal(err)
		}
		c, err := repo.Commit(name, map[string]string{name + ".bin": noise(t, blob)})
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, c)
		urls[c] = repo.Dir
	}
	srv = serve(t, root, &sourcetest.Server{SHA1InWant: true})
	a, b, c := commits[0], commits[1], commits[2]
	req := func(commit string) source.Request { return source.Request{URL: srv.URL(urls[commit]), Commit: commit} }
	// Room for one fetch under way and one checkout besides.
	f := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle(), MaxCacheBytes: 3*blob + 256<<10}
	ctx := context.Background()
	fetched := func(commit string) bool {
		before := srv.Requests()
		if err := f.With(ctx, req(commit), func(source.Checkout) error { return nil }); err != nil {
			t.Fatalf("commit %s: %v", commit, err)
		}
		return srv.Requests() != before
	}
	fetched(a)
	fetched(b)
	if fetched(a) {
		t.Fatal("a was fetched again: the cache should hold a and b")
	}
	// a was used after b: c's fetch evicts b, the least recently used.
	fetched(c)
	if fetched(a) {
		t.Error("a, used more recently than b, was evicted")
	}
	if !fetched(b) {
		t.Error("b, the least recently used, was kept")
	}
	if u, du := f.Used(), diskUsage(f.Dir); u > f.MaxCacheBytes || du > f.MaxCacheBytes+4096 {
		t.Errorf("used %d, on disk %d: over the budget %d", u, du, f.MaxCacheBytes)
	}

	// Everything in use: a fetch that needs room evicts nothing and fails, naming why.
	tight := &source.Fetcher{Dir: t.TempDir(), Hosts: local, CABundle: srv.CABundle(), MaxCacheBytes: 2*blob + 256<<10}
	err := tight.With(ctx, req(a), func(ca source.Checkout) error {
		err := tight.With(ctx, req(b), func(source.Checkout) error { return nil })
		if _, serr := os.Stat(filepath.Join(ca.Dir, "a.bin")); serr != nil {
			t.Errorf("the checkout in use was evicted: %v", serr)
		}
		return err
	})
	if !errors.Is(err, source.ErrTooLarge) || !strings.Contains(err.Error(), "taken by checkouts in use") {
		t.Fatalf("error = %v, want the budget taken by checkouts in use", err)
	}
	// Control: once a is no longer in use, b's fetch evicts it.
	if err := tight.With(ctx, req(b), func(source.Checkout) error { return nil }); err != nil {
		t.Fatalf("with nothing in use: %v", err)
	}
}
