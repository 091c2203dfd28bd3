package catalyst

import (
	"flag"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/source"
)

// TestBudgetFlags: the budget flags' defaults are the documented ones, set values reach the deploy's
// settings, and a byte count that is not a positive quantity is refused.
func TestBudgetFlags(t *testing.T) {
	parse := func(args ...string) (DeployConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f := BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			return DeployConfig{}, err
		}
		o, err := f.Options(1, nil)
		return o.Deploy, err
	}
	d, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if d.CacheBytes != source.DefaultMaxCacheBytes || d.Render.MaxBytes != render.DefaultMaxBytes ||
		d.Render.MemoryBytes != render.DefaultMemoryBytes || d.Render.Timeout != render.DefaultTimeout || d.MaxConcurrentRenders != DefaultConcurrentRenders {
		t.Errorf("defaults: %+v", d)
	}
	d, err = parse("--catalyst-git-cache-bytes=1Gi", "--catalyst-render-max-bytes=4Mi", "--catalyst-render-memory=200Mi",
		"--catalyst-render-timeout=30s", "--catalyst-max-concurrent-renders=1")
	if err != nil {
		t.Fatal(err)
	}
	if d.CacheBytes != 1<<30 || d.Render.MaxBytes != 4<<20 || d.Render.MemoryBytes != 200<<20 || d.Render.Timeout != 30*time.Second || d.MaxConcurrentRenders != 1 {
		t.Errorf("set: %+v", d)
	}
	for _, bad := range []string{"--catalyst-git-cache-bytes=lots", "--catalyst-render-max-bytes=0", "--catalyst-render-memory=-1Mi"} {
		if _, err := parse(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
