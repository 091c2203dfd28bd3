package homelab

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"

	"github.com/platform-operator/platform-operator/internal/kit/admit"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
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
	// DomainPolicy is --homelab-domain-policy, parsed (flags.go, before the API server is contacted):
	// which namespaces may claim which hostnames with which ClusterIssuers. The zero policy allows no
	// Domain at all.
	DomainPolicy DomainPolicy
	// PostgresCleanupTimeout bounds how long a deleted PostgresDatabase waits for its database to be
	// dropped; postgres.DefaultCleanupTimeout when zero.
	PostgresCleanupTimeout time.Duration
	// OperatorImage is the operator's own image (the backup group's, main.go), run by a PostgresDatabase
	// restore Job's init container; when empty it is read from the operator's own pod (PodNamespace,
	// PodName, the backup group's too).
	OperatorImage string
	// PodNamespace and PodName are the operator's own pod (POD_NAMESPACE, POD_NAME).
	PodNamespace, PodName string
	// RestorePostgresImage is pg_restore's image template with %d for the server's major version: the
	// backup group's --backup-postgres-image, so a backup and its restore use the same images.
	RestorePostgresImage string
}

// Group is the homelab API group as the manager sees it: a reconciler per kind, then the webhooks.
func Group(opts Options) manager.Group {
	workers := opts.MaxConcurrentReconciles
	return manager.NewGroup("homelab",
		manager.Reconciler{Name: "RedisConnection", Cache: redisConnectionCache, Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&RedisConnectionReconciler{MaxConcurrentReconciles: workers}).SetupWithManager(mgr)
		}},
		manager.Reconciler{Name: "AuthentikServer", Cache: authentikServerCache, Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			return (&AuthentikServerReconciler{MaxConcurrentReconciles: workers, Capabilities: caps, Image: opts.AuthentikImage}).SetupWithManager(mgr)
		}},
		// Domains by hostname (and its parent): the Domain reconciler and webhook both read it.
		manager.Index{Object: &homelabv1.Domain{}, Field: domainHostnameIndex, Extract: func(o client.Object) []string {
			return claimIndexValues(o.(*homelabv1.Domain))
		}},
		manager.Reconciler{Name: "Domain", Cache: domainCache, Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			return (&DomainReconciler{MaxConcurrentReconciles: workers, Capabilities: caps, GatewayNamespace: opts.GatewayNamespace,
				GatewaySelector: opts.GatewaySelector, Policy: opts.DomainPolicy}).SetupWithManager(mgr)
		}},
		// PostgresDatabase's Secret watch uses the index PostgresConnection's setup registers: keep this order.
		manager.Reconciler{Name: "PostgresConnection", Cache: postgresCacheRules, Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&PostgresConnectionReconciler{MaxConcurrentReconciles: workers}).SetupWithManager(mgr)
		}},
		manager.Reconciler{Name: "PostgresDatabase", Cache: postgresDatabaseCache, Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			return (&PostgresDatabaseReconciler{MaxConcurrentReconciles: workers, CleanupTimeout: opts.PostgresCleanupTimeout,
				OperatorImage: opts.OperatorImage, PodNamespace: opts.PodNamespace, PodName: opts.PodName,
				PostgresImage: opts.RestorePostgresImage, Capabilities: caps}).SetupWithManager(mgr)
		}},
		// The webhooks (domain_webhook.go) read through the manager's cache and the Domain hostname index.
		manager.Webhook{For: &homelabv1.Domain{}, Validator: func(mgr ctrl.Manager) (admission.CustomValidator, error) {
			return admit.Typed(&DomainValidator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Policy: opts.DomainPolicy}), nil
		}},
		manager.Webhook{For: &homelabv1.AuthentikServer{}, Validator: func(mgr ctrl.Manager) (admission.CustomValidator, error) {
			return admit.Typed(&AuthentikServerValidator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader()}), nil
		}},
	)
}

// postgresDatabaseCache: restore Jobs are the operator's own (labelled); Backups are the users' (all of
// them, for restores and status.lastBackup), where the cluster serves them.
func postgresDatabaseCache(caps platform.Capabilities) []manager.CacheRule {
	rules := []manager.CacheRule{{Object: &batchv1.Job{}}}
	if caps.Backups {
		rules = append(rules, lastbackup.CacheRule())
	}
	return rules
}
