package homelab

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"

	"github.com/platform-operator/platform-operator/internal/kit/admit"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// Options configure the homelab controllers; flags.go fills them from the command line.
type Options struct {
	// MaxConcurrentReconciles is how many objects of each kind are reconciled at once.
	MaxConcurrentReconciles int
	// GatewayNamespace is where Domains' Certificates and Istio Gateways go (the namespace of the ingress
	// gateway that serves them); domain.DefaultGatewayNamespace when empty.
	GatewayNamespace string
	// GatewaySelector picks the ingress gateway pods of Domains' Gateways; domain.DefaultGatewaySelector
	// when empty.
	GatewaySelector map[string]string
	// AuthentikImage is the image of AuthentikServers' pods; authentik.DefaultImage when empty.
	AuthentikImage string
	// DomainPolicy is --homelab-domain-policy (ParseDomainPolicy): which namespaces may claim which
	// hostnames with which ClusterIssuers. Empty allows no Domain at all.
	DomainPolicy string
	// PostgresCleanupTimeout bounds how long a deleted PostgresDatabase waits for its database to be
	// dropped; postgres.DefaultCleanupTimeout when zero.
	PostgresCleanupTimeout time.Duration
}

// Group is the homelab API group as the manager sees it: one row per kind, then the webhooks.
func Group(opts Options) manager.Group {
	// row binds one kind's cache rules and setup (each in its controller's file) to opts.
	row := func(name string, cache func(platform.Capabilities) []manager.CacheRule,
		setup func(ctrl.Manager, platform.Capabilities, Options) error) manager.Controller {
		return manager.Controller{Name: name, Cache: cache, Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			return setup(mgr, caps, opts)
		}}
	}
	return manager.NewGroup("homelab",
		row("RedisConnection", redisConnectionCache, setupRedisConnection),
		row("AuthentikServer", authentikServerCache, setupAuthentikServer),
		row("Domain", domainCache, setupDomain),
		// PostgresDatabase's Secret watch uses the index PostgresConnection's setup registers: keep this order.
		row("PostgresConnection", postgresCacheRules, setupPostgresConnection),
		row("PostgresDatabase", nil, setupPostgresDatabase),
		manager.Controller{Name: "Domain and AuthentikServer webhooks", Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return setupWebhooks(mgr, opts)
		}},
	)
}

// setupWebhooks registers the Domain and AuthentikServer admission webhooks (domain_webhook.go); they
// read through the manager's cache and the Domain hostname index setupDomain registers.
func setupWebhooks(mgr ctrl.Manager, opts Options) error {
	policy, err := ParseDomainPolicy(opts.DomainPolicy)
	if err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr).For(&homelabv1.Domain{}).
		WithValidator(admit.Typed(&DomainValidator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Policy: policy})).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr).For(&homelabv1.AuthentikServer{}).
		WithValidator(admit.Typed(&AuthentikServerValidator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader()})).Complete()
}
