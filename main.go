// Command platform-operator is the manager of every platform-operator API: it reads the flags, sets the
// manager's options and hands each API group to internal/manager, and holds no logic of its own.
package main

import (
	"crypto/tls"
	"flag"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	catalystctrl "github.com/platform-operator/platform-operator/controllers/catalyst"
	homelabctrl "github.com/platform-operator/platform-operator/controllers/homelab"
	iotctrl "github.com/platform-operator/platform-operator/controllers/iot"
	ircctrl "github.com/platform-operator/platform-operator/controllers/irc"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/source"
	"github.com/platform-operator/platform-operator/internal/domain"
	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/memlimit"
	opmetrics "github.com/platform-operator/platform-operator/internal/metrics"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// eventCorrelatorObjects is how many objects' recent events client-go's event correlator remembers (to
// aggregate repeats and rate-limit a spamming object). Its default, 4096, costs about 1.2 KiB per object
// up to that many; an object of the operator emits an event only when something about it changes, so
// remembering the last 512 loses nothing a user would see.
const eventCorrelatorObjects = 512

func main() {
	var (
		metricsAddr, probeAddr string
		pprofAddr              string
		secureMetrics, http2   bool
		leaderElect            bool
		leaderElectionNS       string
		leaseDuration          time.Duration
		renewDeadline          time.Duration
		retryPeriod            time.Duration
		workers                int
		resync                 time.Duration
		qps                    float64
		burst                  int
		enableWebhooks         bool
		webhookHost            string
		webhookPort            int
		webhookCertDir         string
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint, e.g. :8443 (HTTPS) or :8080 (HTTP); 0 turns it off.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof endpoints (plain HTTP, unauthenticated: bind it to 127.0.0.1), e.g. 127.0.0.1:8082; empty turns them off.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles at a time.")
	flag.StringVar(&leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease; defaults to the operator's own namespace, so it is needed only when running outside a cluster.")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long followers wait after the leader's last renewal before taking over.")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader retries renewing its lease before it gives up leadership.")
	flag.DurationVar(&retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the lease.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized through the API server.")
	flag.BoolVar(&http2, "enable-http2", false, "Serve metrics and webhooks over HTTP/2 too (off: HTTP/2 rapid-reset CVEs).")
	flag.IntVar(&workers, "max-concurrent-reconciles", 8, "Networks reconciled at once.")
	flag.DurationVar(&resync, "sync-period", ircctrl.DefaultResync, "How often every network is reconciled even when nothing changed.")
	flag.Float64Var(&qps, "kube-api-qps", 500, "Requests per second the operator sends the API server, all clients and resource types together (docs/performance.md).")
	flag.IntVar(&burst, "kube-api-burst", 1000, "Requests the operator may send at once above --kube-api-qps.")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks (docs/webhooks.md); they need tls.crt and tls.key in --webhook-cert-dir. false serves none: for a cluster whose webhook configurations do not point at this process.")
	flag.StringVar(&webhookHost, "webhook-host", "", "Address the webhook server listens on; empty listens on every interface.")
	flag.IntVar(&webhookPort, "webhook-port", webhook.DefaultPort, "Port of the admission webhook server (HTTPS).")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", manager.DefaultWebhookCertDir, "Directory holding the webhook server's tls.crt and tls.key, reread when they change (OLM and config/default mount them here).")
	natsURL := flag.String("nats-url", os.Getenv("NATS_URL"), "URL of the NATS server (JetStream) of the IoT fleet, e.g. nats://nats.iot:4222 (default $NATS_URL); empty runs the iot Deployment controller without NATS: each Deployment then says NATSNotConfigured (docs/iot.md).")
	natsCreds := flag.String("nats-credentials-file", "", "NATS .creds file (user JWT and nkey seed) for --nats-url, mounted from a Secret; NATS_USER and NATS_PASSWORD in the environment authenticate with a user and password instead.")
	natsCA := flag.String("nats-ca-file", "", "PEM file of the CAs that sign the NATS server's certificate; set, the connection to --nats-url requires TLS.")
	natsCert := flag.String("nats-cert-file", "", "PEM client certificate for a NATS server that verifies clients (with --nats-key-file).")
	natsKey := flag.String("nats-key-file", "", "PEM key of --nats-cert-file.")
	natsHeartbeatTTL := flag.Duration("nats-heartbeat-ttl", 30*time.Second, "How long an IoT device counts as alive after its agent's last heartbeat.")
	iotFleetPolicy := flag.String(iotctrl.FlagFleetPolicy, os.Getenv("IOT_FLEET_POLICY"), "Which devices each namespace's iot Deployments may target: NAMESPACE=KEY:VALUE|VALUE (the selector must require label KEY to be one of the VALUEs) or NAMESPACE=* (any selector, {} included), entries separated by ; (NAMESPACE * for namespaces no entry names); empty allows no targeting (default $IOT_FLEET_POLICY, which an OLM Subscription can set; docs/iot.md, Tenancy and image policy).")
	iotRegistries := flag.String(iotctrl.FlagAllowedRegistries, os.Getenv("IOT_ALLOWED_REGISTRIES"), "Comma-separated registries iot Deployment images may come from: a host (any port), host:port, or host/path prefix (docker.io/library for official Docker Hub images); empty allows any (default $IOT_ALLOWED_REGISTRIES).")
	iotRequireDigest := flag.Bool(iotctrl.FlagRequireDigest, os.Getenv("IOT_REQUIRE_DIGEST") == "true", "Refuse iot Deployment images not pinned by digest (image@sha256:...); default true when $IOT_REQUIRE_DIGEST is true.")
	homelabDomainPolicy := flag.String(homelabctrl.FlagDomainPolicy, "", "Which namespaces may claim which homelab Domain hostnames, and with which ClusterIssuers: NAMESPACE=SUFFIX|SUFFIX[:ISSUER|ISSUER];... (NAMESPACE or SUFFIX * for any); empty allows no Domain (docs/homelab-services.md, Hostname ownership and policy).")
	homelabGatewayNS := flag.String("homelab-gateway-namespace", domain.DefaultGatewayNamespace, "Namespace of the Istio ingress gateway that serves homelab Domains: their Certificates and Gateways are made there (docs/homelab-services.md).")
	sojuDatabaseSecret := flag.String("soju-database-secret", "", "Admin connection Secret of SojuBouncer databases, as namespace/name (keys host, port, user, password and the optional sslmode and database), for bouncers without spec.database.adminSecretName; empty: those report AdminConnectionNotConfigured (docs/soju.md).")
	sojuDatabaseNamespaces := flag.String("soju-database-namespaces", "", "Comma-separated namespaces, besides the --soju-database-secret Secret's own, whose SojuBouncers may use that admin connection; * allows every namespace; empty: the Secret's namespace only (others report AdminConnectionNotAllowed, docs/soju.md).")
	catalystDomain := flag.String("catalyst-preview-domain", catalyst.DefaultDomain, "DNS domain of catalyst Environment hosts (<namespace>.<domain>) when the Project names none (docs/catalyst.md).")
	catalystIssuer := flag.String("catalyst-cluster-issuer", catalyst.DefaultIssuerName, "cert-manager ClusterIssuer of catalyst Environment certificates when the Project names none; empty serves plain http.")
	catalystIngressClass := flag.String("catalyst-ingress-class", "", "IngressClass of catalyst Environment Ingresses when the Project names none; empty uses the cluster's default class.")
	catalystBuilderImage := flag.String("catalyst-builder-image", catalyst.BuilderImage(os.Getenv("RELATED_IMAGE_KANIKO")), "Kaniko executor image of catalyst build Jobs (default $RELATED_IMAGE_KANIKO, else "+catalyst.DefaultBuilderImage+"; docs/catalyst.md, Builds).")
	catalystInsecureRegistries := flag.String("catalyst-insecure-registries", "", "Comma-separated registries (host or host:port) that catalyst image checks and builds reach over plain http; loopback registries always are, every other only over https.")
	catalystRegistries := flag.String("catalyst-registries", "", "Comma-separated registries (host for every port, or host:port) catalyst Projects may build to; empty allows any.")
	catalystDefaultRegistry := flag.String("catalyst-default-registry", "", "Registry catalyst Projects without spec.build build to, as <registry>/<namespace>/<name> (such as image-registry.openshift-image-registry.svc:5000); empty leaves them BuildNotConfigured.")
	catalystDefaultRegistrySecret := flag.String("catalyst-default-registry-secret", "", "Name of the dockerconfigjson Secret, in each Project's namespace, with the default registry's credentials; empty is anonymous.")
	catalystRegistryTimeout := flag.Duration("catalyst-registry-timeout", catalyst.DefaultRegistryTimeout, "Bound of one catalyst image check; a slower registry is RegistryUnreachable.")
	catalystGitHosts := flag.String("catalyst-git-hosts", "", "Comma-separated hosts catalyst deploys may fetch Git repositories from, whatever their address; empty allows any host with a public address.")
	catalystGitCAFile := flag.String("catalyst-git-ca-file", "", "PEM file of CAs trusted for catalyst Git https besides the system's.")
	catalystTenantRole := flag.String("catalyst-tenant-cluster-role", catalyst.DefaultTenantClusterRole, "ClusterRole bound (in each environment namespace only) to the tenant ServiceAccount catalyst-deployer, which the operator impersonates to deploy a repository's objects; the operator needs bind on it (docs/catalyst.md, Tenancy).")
	catalystRemoteBases := flag.Bool("catalyst-allow-remote-bases", false, "Let catalyst kustomizations name remote bases and resources (URLs), which the operator then fetches itself; refused when false.")
	catalystIngressNS := flag.String("catalyst-ingress-namespace", catalyst.DefaultIngressNamespace, "Namespace of the ingress controller, whose pods the catalyst NetworkPolicy lets reach every Environment's pods.")
	catalystPodSecurity := flag.String(catalyst.FlagPodSecurityLevel, string(catalyst.PodSecurityRestricted), "Pod Security level catalyst environment namespaces enforce: privileged, baseline or restricted (audit and warn stay restricted).")
	catalystMaxCPU := flag.String(catalyst.FlagMaxQuotaCPU, "", "Most CPU a catalyst Project's resources.defaultQuota may ask for, such as 8; empty sets no ceiling.")
	catalystMaxMemory := flag.String(catalyst.FlagMaxQuotaMemory, "", "Most memory a catalyst Project's resources.defaultQuota may ask for, such as 16Gi; empty sets no ceiling.")
	catalystQuotaStorage := flag.String(catalyst.FlagQuotaStorage, catalyst.DefaultQuotaStorage.String(), "Storage the PersistentVolumeClaims of each catalyst environment namespace may request together (requests.storage); 0 allows none.")
	catalystAllowedDomains := flag.String(catalyst.FlagAllowedDomains, "", "Comma-separated ingress domains catalyst Projects may name besides --catalyst-preview-domain: a name exactly, *.name any domain one label below name.")
	catalystAllowedIssuers := flag.String(catalyst.FlagAllowedClusterIssuers, "", "Comma-separated cert-manager ClusterIssuers catalyst Projects may name besides --catalyst-cluster-issuer; an Issuer in the environment's namespace is always allowed.")
	catalystCacheDir := flag.String("catalyst-cache-dir", catalyst.DefaultCacheDir(), "Directory of the catalyst Git cache (fetched commits), on a writable volume; the default follows $TMPDIR.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	// The cache grows with the networks (docs/performance.md); near the container's limit the collector
	// should work harder rather than the kernel kill the operator.
	if limit, err := memlimit.Set(memlimit.CgroupFile); err != nil {
		log.Error(err, "no Go memory limit set from the container's")
	} else if limit > 0 {
		log.Info("Go soft memory limit from the container's", "bytes", limit)
	}

	cfg := ctrl.GetConfigOrDie()
	shareRateLimit(cfg, qps, burst)

	caps, err := platform.Discover(cfg)
	if err != nil {
		log.Error(err, "discover cluster APIs")
		os.Exit(1)
	}
	log.Info("cluster APIs", "certManager", caps.CertManager, "routes", caps.Routes, "istio", caps.Istio, "openShift", caps.OpenShift)
	sojuAdminSecret, err := ircctrl.ParseAdminSecret(*sojuDatabaseSecret)
	if err != nil {
		log.Error(err, "--soju-database-secret")
		os.Exit(1)
	}
	sojuAdminNamespaces, err := postgres.ParseNamespaces(*sojuDatabaseNamespaces)
	if err != nil {
		log.Error(err, "--soju-database-namespaces")
		os.Exit(1)
	}

	var tlsOpts []func(*tls.Config)
	if !http2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics, TLSOpts: tlsOpts}
	if secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	webhookServer, err := manager.WebhookServer(enableWebhooks, webhook.Options{
		Host: webhookHost, Port: webhookPort, CertDir: webhookCertDir, TLSOpts: tlsOpts,
	})
	if err != nil {
		log.Error(err, "webhook server")
		os.Exit(1)
	}

	fleetPolicy, err := iotctrl.ParseFleetPolicy(*iotFleetPolicy)
	if err != nil {
		log.Error(err, "--"+iotctrl.FlagFleetPolicy)
		os.Exit(1)
	}
	iotRegistryList, err := iotctrl.ParseRegistries(*iotRegistries)
	if err != nil {
		log.Error(err, "--"+iotctrl.FlagAllowedRegistries)
		os.Exit(1)
	}
	fleet := &iotctrl.DeploymentReconciler{MaxConcurrentReconciles: workers, Policy: iotctrl.Policy{
		Fleet: fleetPolicy, Images: iotctrl.ImagePolicy{Registries: iotRegistryList, RequireDigest: *iotRequireDigest}}}
	if *natsURL != "" {
		// Connected in the background, retried until NATS answers: the other APIs do not wait for it.
		fleet.NATS = &iotctrl.NATSOptions{URL: *natsURL, CredentialsFile: *natsCreds, CAFile: *natsCA, CertFile: *natsCert, KeyFile: *natsKey,
			User: os.Getenv("NATS_USER"), Password: os.Getenv("NATS_PASSWORD"), HeartbeatTTL: *natsHeartbeatTTL}
	}

	watched := watchNamespaces(os.Getenv("WATCH_NAMESPACE"))
	catalystDeploy, err := catalystctrl.DeployConfigFromFlags(*catalystGitHosts, *catalystGitCAFile)
	if err != nil {
		log.Error(err, "catalyst deploy settings")
		os.Exit(1)
	}
	catalystDeploy.CacheDir = *catalystCacheDir
	catalystDefaults, err := catalyst.Defaults{Domain: *catalystDomain, IngressClass: *catalystIngressClass, IngressNamespace: *catalystIngressNS,
		Issuer: catalystv1.IssuerRef{Name: *catalystIssuer, Kind: "ClusterIssuer"}}.WithLimits(catalyst.LimitFlags{
		PodSecurityLevel: *catalystPodSecurity, MaxQuotaCPU: *catalystMaxCPU, MaxQuotaMemory: *catalystMaxMemory,
		QuotaStorage: *catalystQuotaStorage, AllowedDomains: *catalystAllowedDomains, AllowedClusterIssuers: *catalystAllowedIssuers})
	if err != nil {
		log.Error(err, "catalyst limits")
		os.Exit(1)
	}
	catalystDeploy.TenantClusterRole, catalystDeploy.AllowRemoteBases = *catalystTenantRole, *catalystRemoteBases
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:                       metricsOpts,
		WebhookServer:                 webhookServer,
		HealthProbeBindAddress:        probeAddr,
		PprofBindAddress:              pprofAddr,
		LeaderElection:                leaderElect,
		LeaderElectionNamespace:       leaderElectionNS,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
		LeaderElectionReleaseOnCancel: true,
		// The manager lives as long as the process, so the broadcaster's goroutines cannot outlive it
		// (what the option's deprecation warns of).
		EventBroadcaster: record.NewBroadcasterWithCorrelatorOptions(record.CorrelatorOptions{
			LRUCacheSize: eventCorrelatorObjects,
		}),
		Cache: cache.Options{
			SyncPeriod:        &resync,
			DefaultNamespaces: watched,
		},
	}, caps,
		ircctrl.GroupWith(&ircctrl.ErgoNetworkReconciler{
			Image:                   os.Getenv("RELATED_IMAGE_ERGO"),
			MaxConcurrentReconciles: workers,
		}, &ircctrl.SojuBouncerReconciler{
			Image:                   os.Getenv("RELATED_IMAGE_SOJU"),
			MaxConcurrentReconciles: workers,
			DefaultAdminSecret:      sojuAdminSecret,
			DefaultAdminNamespaces:  sojuAdminNamespaces,
		}),
		iotctrl.Group(fleet),
		homelabctrl.Group(homelabctrl.Options{
			MaxConcurrentReconciles: workers,
			GatewayNamespace:        *homelabGatewayNS,
			AuthentikImage:          os.Getenv("RELATED_IMAGE_AUTHENTIK"),
			DomainPolicy:            *homelabDomainPolicy,
		}),
		catalystctrl.Group(catalystctrl.Options{
			Defaults:                catalystDefaults,
			MaxConcurrentReconciles: workers,
			WatchNamespaces:         slices.Sorted(maps.Keys(watched)),
			Build: catalyst.BuildConfig{BuilderImage: *catalystBuilderImage,
				InsecureRegistries: catalyst.SplitRegistries(*catalystInsecureRegistries),
				Registries:         catalyst.SplitRegistries(*catalystRegistries),
				DefaultRegistry:    *catalystDefaultRegistry, DefaultRegistrySecret: *catalystDefaultRegistrySecret,
				GitCABundle: catalystDeploy.GitCABundle, GitAllowed: (&source.Fetcher{Hosts: catalystDeploy.GitHosts}).Allowed, RegistryTimeout: *catalystRegistryTimeout},
			Deploy: catalystDeploy,
		}),
	)
	if err != nil {
		log.Error(err, "create manager")
		os.Exit(1)
	}
	// The operator's own metrics (docs/metrics.md), served on /metrics with controller-runtime's. The
	// gauges are counted from the cache at scrape time, for the kinds whose controllers run: catalyst runs
	// none in a namespace-scoped install (WATCH_NAMESPACE), and listing its kinds would start informers.
	metricGroups := []string{"irc", "iot", "homelab"}
	if len(watched) == 0 {
		metricGroups = append(metricGroups, "catalyst")
	}
	if err := opmetrics.Register(ctrlmetrics.Registry, mgr.GetClient(), mgr.Elected(), opmetrics.KindsOf(metricGroups...)...); err != nil {
		log.Error(err, "register metrics")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "add health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "add ready check")
		os.Exit(1)
	}
	if disabled, ok := webhookServer.(*manager.DisabledWebhookServer); ok {
		log.Info("admission webhooks are not served (--enable-webhooks=false)", "paths", disabled.Paths())
	} else if err := mgr.AddReadyzCheck("webhooks", mgr.GetWebhookServer().StartedChecker()); err != nil {
		// Ready only once the webhook server answers TLS, which the API server calls as soon as the pod is
		// ready. GetWebhookServer adds the server to the manager even before a group registers a webhook.
		log.Error(err, "add webhook ready check")
		os.Exit(1)
	}

	log.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "run manager")
		os.Exit(1)
	}
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
