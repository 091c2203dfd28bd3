// Command platform-operator is the manager of every platform-operator API: it binds the manager's flags
// and each group's (controllers/<group>/flags.go), sets the manager's options and hands each API group to
// internal/kit/manager, and holds no logic of its own.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	backupctrl "github.com/platform-operator/platform-operator/controllers/backup"
	catalystctrl "github.com/platform-operator/platform-operator/controllers/catalyst"
	homelabctrl "github.com/platform-operator/platform-operator/controllers/homelab"
	iotctrl "github.com/platform-operator/platform-operator/controllers/iot"
	ircctrl "github.com/platform-operator/platform-operator/controllers/irc"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/datastore"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/memtrim"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// eventCorrelatorObjects is how many objects' recent events client-go's event correlator remembers (to
// aggregate repeats and rate-limit a spamming object). Its default, 4096, costs about 1.2 KiB per object
// up to that many; an object of the operator emits an event only when something about it changes, so
// remembering the last 512 loses nothing a user would see.
const eventCorrelatorObjects = 512

// memoryLimitRatio is the share of the container's memory limit Go's soft limit is set to: the rest is for
// what the runtime does not count (thread stacks, the binary) and for the collector's headroom.
const memoryLimitRatio = 0.9

func main() {
	// A catalyst render's child process is this binary (render.Isolated): it renders and exits here.
	render.MaybeChild()
	// `platform-operator backup ...` is the backup program (internal/kit/backup, docs/backup.md), which the
	// operator's Jobs run from this same binary; everything else is the manager.
	if backup.IsCommand(os.Args) {
		// The formats of the datastores it backs up are the systems' (the kit knows none): ergo's ircd.db.
		backup.SetDatastore(backup.FormatBuntDB, datastore.Backup{})
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := backup.Main(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	fs := flag.CommandLine
	op := bindOperatorFlags(fs)
	ircFlags, iotFlags := ircctrl.BindFlags(fs), iotctrl.BindFlags(fs)
	homelabFlags, catalystFlags := homelabctrl.BindFlags(fs), catalystctrl.BindFlags(fs)
	backupFlags := backupctrl.BindFlags(fs)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(fs)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	// The cache grows with the networks (docs/performance.md); near the container's limit the collector
	// should work harder rather than the kernel kill the operator. automemlimit reads the cgroup (v1 or
	// v2) limit and leaves a GOMEMLIMIT (or AUTOMEMLIMIT=off) set by the user alone.
	if limit, err := memlimit.SetGoMemLimitWithOpts(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(memlimit.FromCgroup)); err != nil {
		log.Error(err, "no Go memory limit set from the container's")
	} else if limit > 0 {
		log.Info("Go soft memory limit from the container's", "bytes", limit)
	}

	watched := watchNamespaces(os.Getenv("WATCH_NAMESPACE"))
	groups, err := groupsFromFlags(op.workers, slices.Sorted(maps.Keys(watched)), ircFlags, iotFlags, homelabFlags, catalystFlags, backupFlags)
	if err != nil {
		log.Error(err, "flags")
		os.Exit(1)
	}
	if err := run(log, op, watched, groups); err != nil {
		log.Error(err, "operator")
		os.Exit(1)
	}
}

// groupsFromFlags is every API group, configured by its flags: each group's flags.go binds them and
// turns their values into the group's Options.
func groupsFromFlags(workers int, watched []string, ircFlags *ircctrl.Flags, iotFlags *iotctrl.Flags,
	homelabFlags *homelabctrl.Flags, catalystFlags *catalystctrl.Flags, backupFlags *backupctrl.Flags) ([]manager.Group, error) {
	ircOpts, err := ircFlags.Options(workers)
	if err != nil {
		return nil, err
	}
	iotOpts, err := iotFlags.Options(workers)
	if err != nil {
		return nil, err
	}
	catalystOpts, err := catalystFlags.Options(workers, watched)
	if err != nil {
		return nil, fmt.Errorf("catalyst settings: %w", err)
	}
	backupOpts, err := backupFlags.Options(workers)
	if err != nil {
		return nil, err
	}
	homelabOpts, err := homelabFlags.Options(workers)
	if err != nil {
		return nil, err
	}
	// A restore Job is a backup Job's pod: the same operator image, pg_restore in the image pg_dump runs in.
	homelabOpts.OperatorImage, homelabOpts.RestorePostgresImage = backupOpts.OperatorImage, backupOpts.PostgresImage
	homelabOpts.PodNamespace, homelabOpts.PodName = backupOpts.PodNamespace, backupOpts.PodName
	// The irc group's restore Jobs (an ErgoNetwork's datastore, a SojuBouncer's database) run the same images.
	ircOpts.OperatorImage, ircOpts.RestorePostgresImage = backupOpts.OperatorImage, backupOpts.PostgresImage
	ircOpts.PodNamespace, ircOpts.PodName = backupOpts.PodNamespace, backupOpts.PodName
	return []manager.Group{
		ircctrl.Group(ircOpts),
		iotctrl.Group(iotOpts),
		homelabctrl.Group(homelabOpts),
		catalystctrl.Group(catalystOpts),
		backupctrl.Group(backupOpts),
	}, nil
}

// operatorFlags are the flags of the manager itself, shared by every group: serving, leader election,
// workers, each reconcile's timeout and retry back-off, the cache's resync and the API server's rate limit.
type operatorFlags struct {
	metricsAddr, probeAddr, pprofAddr         string
	secureMetrics, http2, leaderElect         bool
	leaderElectionNS                          string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	workers                                   int
	reconcileTimeout                          time.Duration
	retry                                     manager.Retry
	resync                                    time.Duration
	qps                                       float64
	burst                                     int
	enableWebhooks                            bool
	webhookHost, webhookCertDir               string
	webhookPort                               int
	trimStartPages                            bool
}

func bindOperatorFlags(fs *flag.FlagSet) *operatorFlags {
	o := &operatorFlags{}
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint, e.g. :8443 (HTTPS) or :8080 (HTTP); 0 turns it off.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof endpoints (plain HTTP, unauthenticated: bind it to 127.0.0.1), e.g. 127.0.0.1:8082; empty turns them off.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease; defaults to the operator's own namespace, so it is needed only when running outside a cluster.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long followers wait after the leader's last renewal before taking over.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader retries renewing its lease before it gives up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the lease.")
	fs.BoolVar(&o.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized through the API server.")
	fs.BoolVar(&o.http2, "enable-http2", false, "Serve metrics and webhooks over HTTP/2 too (off: HTTP/2 rapid-reset CVEs).")
	fs.IntVar(&o.workers, "max-concurrent-reconciles", 8, "Objects of each kind reconciled at once.")
	fs.DurationVar(&o.reconcileTimeout, "reconcile-timeout", 0, "How long one reconcile of one object may take before its context is cancelled (its API calls then fail, and the failed reconcile is retried with the --retry-* back-off); 0 sets no limit (README, Running it).")
	fs.DurationVar(&o.retry.BaseDelay, "retry-base-delay", manager.DefaultRetry.BaseDelay, "How long a controller waits before retrying an object whose reconcile failed, doubled after each failure in a row (up to --retry-max-delay).")
	fs.DurationVar(&o.retry.MaxDelay, "retry-max-delay", manager.DefaultRetry.MaxDelay, "The longest a controller waits before retrying an object whose reconcile keeps failing.")
	fs.DurationVar(&o.resync, "sync-period", ircctrl.DefaultResync, "How often every object is reconciled even when nothing changed.")
	fs.Float64Var(&o.qps, "kube-api-qps", 500, "Requests per second the operator sends the API server, all clients and resource types together (docs/performance.md).")
	fs.IntVar(&o.burst, "kube-api-burst", 1000, "Requests the operator may send at once above --kube-api-qps.")
	fs.BoolVar(&o.enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks (docs/webhooks.md); they need tls.crt and tls.key in --webhook-cert-dir. false serves none: for a cluster whose webhook configurations do not point at this process.")
	fs.StringVar(&o.webhookHost, "webhook-host", "", "Address the webhook server listens on; empty listens on every interface.")
	fs.IntVar(&o.webhookPort, "webhook-port", webhook.DefaultPort, "Port of the admission webhook server (HTTPS).")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", manager.DefaultWebhookCertDir, "Directory holding the webhook server's tls.crt and tls.key, reread when they change (OLM and config/default mount them here).")
	fs.BoolVar(&o.trimStartPages, "trim-start-pages", true, "Once the manager is idle after its start (elected, synced, under 5% of a core for 5 s), give the kernel back the pages of the binary's code and read-only data the start used; later use reads them back (Linux; docs/performance.md, The idle operator).")
	return o
}

// run builds the manager with the groups, adds the operator's metrics and probes, and runs it until a
// signal stops it.
func run(log logr.Logger, o *operatorFlags, watched map[string]cache.Config, groups []manager.Group) error {
	cfg := ctrl.GetConfigOrDie()
	shareRateLimit(cfg, o.qps, o.burst)

	caps, err := platform.Discover(cfg)
	if err != nil {
		return fmt.Errorf("discover cluster APIs: %w", err)
	}
	log.Info("cluster APIs", "certManager", caps.CertManager, "routes", caps.Routes, "istio", caps.Istio, "openShift", caps.OpenShift, "backups", caps.Backups)

	var tlsOpts []func(*tls.Config)
	if !o.http2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics, TLSOpts: tlsOpts}
	if o.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	webhookServer, err := manager.WebhookServer(o.enableWebhooks, webhook.Options{
		Host: o.webhookHost, Port: o.webhookPort, CertDir: o.webhookCertDir, TLSOpts: tlsOpts,
	})
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}

	if o.reconcileTimeout < 0 {
		return fmt.Errorf("--reconcile-timeout %s is negative", o.reconcileTimeout)
	}
	mgr, err := manager.New(cfg, manager.Options{Retry: o.retry, Options: ctrl.Options{
		Metrics:                       metricsOpts,
		WebhookServer:                 webhookServer,
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionNamespace:       o.leaderElectionNS,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		LeaderElectionReleaseOnCancel: true,
		// The manager lives as long as the process, so the broadcaster's goroutines cannot outlive it
		// (what the option's deprecation warns of).
		EventBroadcaster: record.NewBroadcasterWithCorrelatorOptions(record.CorrelatorOptions{
			LRUCacheSize: eventCorrelatorObjects,
		}),
		Cache: cache.Options{
			SyncPeriod:        &o.resync,
			DefaultNamespaces: watched,
		},
		Controller: config.Controller{ReconciliationTimeout: o.reconcileTimeout},
	}}, caps, groups...)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	// The operator's own metrics (docs/metrics.md), served on /metrics with controller-runtime's. The
	// gauges are counted from the cache at scrape time, for the kinds whose controllers run: catalyst runs
	// none in a namespace-scoped install (WATCH_NAMESPACE), and listing its kinds would start informers.
	metricGroups := []string{"irc", "iot", "homelab"}
	if len(watched) == 0 {
		metricGroups = append(metricGroups, "catalyst")
	}
	if err := opmetrics.Register(ctrlmetrics.Registry, mgr.GetClient(), mgr.Elected(), opmetrics.KindsOf(metricGroups...)...); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	if err := opmetrics.RegisterBackups(ctrlmetrics.Registry, mgr.GetClient(), mgr.Elected()); err != nil {
		return fmt.Errorf("register backup metrics: %w", err)
	}
	if err := iotctrl.RegisterMetrics(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("register fleet metrics: %w", err)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}
	if disabled, ok := webhookServer.(*manager.DisabledWebhookServer); ok {
		log.Info("admission webhooks are not served (--enable-webhooks=false)", "paths", disabled.Paths())
	} else if err := mgr.AddReadyzCheck("webhooks", mgr.GetWebhookServer().StartedChecker()); err != nil {
		// Ready only once the webhook server answers TLS, which the API server calls as soon as the pod is
		// ready. GetWebhookServer adds the server to the manager even before a group registers a webhook.
		return fmt.Errorf("add webhook ready check: %w", err)
	}

	if o.trimStartPages {
		trim := &memtrim.Runnable{Cache: mgr.GetCache(), Elected: mgr.Elected(), Log: ctrl.Log.WithName("memtrim")}
		if err := mgr.Add(trim); err != nil {
			return fmt.Errorf("add memtrim: %w", err)
		}
	}

	log.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// shareRateLimit gives every client the manager makes from cfg (cache, client, events, leader election)
// one token bucket of qps and burst: client-go would give each resource type's client its own, so the
// flags would bound each type separately rather than the operator.
func shareRateLimit(cfg *rest.Config, qps float64, burst int) {
	cfg.QPS, cfg.Burst = float32(qps), burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
}

// watchNamespaces turns WATCH_NAMESPACE (set by OLM from the OperatorGroup's target namespaces) into the
// cache's namespaces; empty means the whole cluster.
func watchNamespaces(env string) map[string]cache.Config {
	var out map[string]cache.Config
	for _, ns := range strings.Split(env, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			if out == nil {
				out = map[string]cache.Config{}
			}
			out[ns] = cache.Config{}
		}
	}
	return out
}
