package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	backupctrl "github.com/platform-operator/platform-operator/controllers/backup"
	catalystctrl "github.com/platform-operator/platform-operator/controllers/catalyst"
	homelabctrl "github.com/platform-operator/platform-operator/controllers/homelab"
	iotctrl "github.com/platform-operator/platform-operator/controllers/iot"
	ircctrl "github.com/platform-operator/platform-operator/controllers/irc"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
)

func TestShareRateLimit(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	shareRateLimit(cfg, 7, 9)
	limiter := cfg.RateLimiter
	if limiter == nil || limiter.QPS() != 7 || cfg.QPS != 7 || cfg.Burst != 9 {
		t.Fatalf("rate limit not set: QPS %v, burst %d, limiter %v", cfg.QPS, cfg.Burst, cfg.RateLimiter)
	}
	// Two resource types' REST clients, made from copies of cfg as controller-runtime makes them, must
	// draw from the same bucket.
	var got []flowcontrol.RateLimiter
	for _, gv := range []schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}} {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &gv
		c.APIPath = "/apis"
		c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rc.GetRateLimiter())
	}
	if got[0] != limiter || got[1] != limiter {
		t.Errorf("REST clients got their own rate limiters, not the shared one")
	}
}

func TestWatchNamespaces(t *testing.T) {
	if watchNamespaces("") != nil || watchNamespaces(" , ") != nil {
		t.Error("an empty WATCH_NAMESPACE must mean the whole cluster")
	}
	got := watchNamespaces("a, b,,a")
	if len(got) != 2 {
		t.Errorf("watchNamespaces = %v, want a and b", got)
	}
	for _, ns := range []string{"a", "b"} {
		if _, ok := got[ns]; !ok {
			t.Errorf("namespace %q missing from %v", ns, got)
		}
	}
}

// A malformed --homelab-domain-policy stops the operator while the flags are read, as every group's
// malformed flag does: groupsFromFlags runs before any API server is contacted (none exists here).
func TestGroupsFromFlagsRefusesBadDomainPolicy(t *testing.T) {
	groups := func(args ...string) ([]manager.Group, error) {
		fs := flag.NewFlagSet("operator", flag.ContinueOnError)
		ircFlags, iotFlags := ircctrl.BindFlags(fs), iotctrl.BindFlags(fs)
		homelabFlags, catalystFlags := homelabctrl.BindFlags(fs), catalystctrl.BindFlags(fs)
		backupFlags := backupctrl.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return groupsFromFlags(1, nil, ircFlags, iotFlags, homelabFlags, catalystFlags, backupFlags)
	}
	if _, err := groups("--homelab-domain-policy=team-a"); err == nil || !strings.Contains(err.Error(), "--homelab-domain-policy") {
		t.Errorf("groupsFromFlags with a malformed domain policy: %v, want an error naming the flag", err)
	}
	// Control: the same flags with a well-formed policy give every group.
	got, err := groups("--homelab-domain-policy=team-a=example.com")
	if err != nil || len(got) != 5 {
		t.Errorf("groupsFromFlags with a well-formed domain policy: %d groups, %v; want 5, nil", len(got), err)
	}
}

// TestManagerFlagDefaults: unset, the reconcile timeout and retry flags are today's behaviour:
// controller-runtime's (no timeout; manager.DefaultRetry, its default back-off).
func TestManagerFlagDefaults(t *testing.T) {
	fs := flag.NewFlagSet("platform-operator", flag.ContinueOnError)
	o := bindOperatorFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.reconcileTimeout != 0 || o.retry != manager.DefaultRetry {
		t.Errorf("defaults: reconcile timeout %s, retry %+v; want none and %+v", o.reconcileTimeout, o.retry, manager.DefaultRetry)
	}
	if err := fs.Parse([]string{"--reconcile-timeout=2m", "--retry-base-delay=1s", "--retry-max-delay=5m"}); err != nil {
		t.Fatal(err)
	}
	if want := (manager.Retry{BaseDelay: time.Second, MaxDelay: 5 * time.Minute}); o.reconcileTimeout != 2*time.Minute || o.retry != want {
		t.Errorf("set: reconcile timeout %s, retry %+v", o.reconcileTimeout, o.retry)
	}
}

// TestTrimStartPagesFlag: the trim is on unless turned off.
func TestTrimStartPagesFlag(t *testing.T) {
	fs := flag.NewFlagSet("platform-operator", flag.ContinueOnError)
	o := bindOperatorFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if !o.trimStartPages {
		t.Error("--trim-start-pages defaults to false; want true")
	}
	if err := fs.Parse([]string{"--trim-start-pages=false"}); err != nil {
		t.Fatal(err)
	}
	if o.trimStartPages {
		t.Error("--trim-start-pages=false left the trim on")
	}
}
