package homelab

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"

	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
)

// Options configure the homelab controllers; main.go fills them from flags.
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

// controller is one kind's reconciler as the group sees it: what it reads from the cache besides its own
// custom resource, and how it registers with the manager.
type controller struct {
	cache func(platform.Capabilities) []manager.CacheRule
	setup func(ctrl.Manager, platform.Capabilities, Options) error
}

// controllers lists the group's reconcilers, one entry per kind.
var controllers = []controller{
	{cache: redisConnectionCache, setup: setupRedisConnection},
	{cache: authentikServerCache, setup: setupAuthentikServer},
	{cache: domainCache, setup: setupDomain},
	// PostgresDatabase's Secret watch uses the index PostgresConnection's setup registers: keep this order.
	{cache: postgresCacheRules, setup: setupPostgresConnection},
	{setup: setupPostgresDatabase},
}

// Group is the homelab API group as the manager sees it.
func Group(opts Options) manager.Group {
	return manager.Group{
		Name: "homelab",
		Cache: func(caps platform.Capabilities) []manager.CacheRule {
			var rules []manager.CacheRule
			for _, c := range controllers {
				if c.cache != nil {
					rules = append(rules, c.cache(caps)...)
				}
			}
			return rules
		},
		Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			for _, c := range controllers {
				if err := c.setup(mgr, caps, opts); err != nil {
					return err
				}
			}
			return setupWebhooks(mgr, opts)
		},
	}
}

// setupWebhooks registers the Domain and AuthentikServer admission webhooks (domain_webhook.go); they
// read through the manager's cache and the Domain hostname index setupDomain registers.
func setupWebhooks(mgr ctrl.Manager, opts Options) error {
	policy, err := ParseDomainPolicy(opts.DomainPolicy)
	if err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr).For(&homelabv1.Domain{}).
		WithValidator(&DomainValidator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Policy: policy}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr).For(&homelabv1.AuthentikServer{}).
		WithValidator(&AuthentikServerValidator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).Complete()
}
