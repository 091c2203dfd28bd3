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
	workers := opts.MaxConcurrentReconciles
	return manager.NewGroup("homelab",
		manager.Controller{Name: "RedisConnection", Cache: redisConnectionCache, Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&RedisConnectionReconciler{MaxConcurrentReconciles: workers}).SetupWithManager(mgr)
		}},
		manager.Controller{Name: "AuthentikServer", Cache: authentikServerCache, Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			return (&AuthentikServerReconciler{MaxConcurrentReconciles: workers, Capabilities: caps, Image: opts.AuthentikImage}).SetupWithManager(mgr)
		}},
		manager.Controller{Name: "Domain", Cache: domainCache, Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			policy, err := ParseDomainPolicy(opts.DomainPolicy)
			if err != nil {
				return err
			}
			return (&DomainReconciler{MaxConcurrentReconciles: workers, Capabilities: caps, GatewayNamespace: opts.GatewayNamespace,
				GatewaySelector: opts.GatewaySelector, Policy: policy}).SetupWithManager(mgr)
		}},
		// PostgresDatabase's Secret watch uses the index PostgresConnection's setup registers: keep this order.
		manager.Controller{Name: "PostgresConnection", Cache: postgresCacheRules, Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&PostgresConnectionReconciler{MaxConcurrentReconciles: workers}).SetupWithManager(mgr)
		}},
		manager.Controller{Name: "PostgresDatabase", Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&PostgresDatabaseReconciler{MaxConcurrentReconciles: workers, CleanupTimeout: opts.PostgresCleanupTimeout}).SetupWithManager(mgr)
		}},
		manager.Controller{Name: "Domain and AuthentikServer webhooks", Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return setupWebhooks(mgr, opts)
		}},
	)
}

// setupWebhooks registers the Domain and AuthentikServer admission webhooks (domain_webhook.go); they
// read through the manager's cache and the Domain hostname index DomainReconciler.SetupWithManager
// registers.
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
