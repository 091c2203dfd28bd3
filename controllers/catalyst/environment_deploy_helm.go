package catalyst

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// helmTimeout bounds one Helm install, upgrade or rollback, hooks included.
const helmTimeout = 5 * time.Minute

// maxReleaseName is Helm's limit on release names.
const maxReleaseName = 53

// ReleaseName is the Helm release of an environment: its name, or when longer than Helm allows, its
// first 46 characters, '-' and 6 hex digits of the name's SHA-256.
func ReleaseName(env string) string {
	if len(env) <= maxReleaseName {
		return env
	}
	sum := sha256.Sum256([]byte(env))
	return env[:maxReleaseName-7] + "-" + hex.EncodeToString(sum[:3])
}

// deployHelm installs the release (or installs it anew when its only revision failed), or upgrades it
// with MaxHistory revisions kept; a failed upgrade is rolled back to the last good revision. Helm keeps
// its release records in Secrets of the environment's namespace.
func (r *deployReconciler) deployHelm(ctx context.Context, s *environmentScope, in *deployInput, rd *rendered, st *catalystv1.DeploymentStatus) (ctrl.Result, error) {
	// A slow API server or a hook that never ends fails this Environment, not the worker.
	ctx, cancel := context.WithTimeout(ctx, helmTimeout)
	defer cancel()
	cfg, err := r.helmConfig(ctx, in.Namespace, r.policy(in))
	if err != nil {
		return ctrl.Result{}, err
	}
	name := ReleaseName(in.Release)
	st.Release, st.Inventory = name, nil
	values := render.HelmValues(in.Input)
	post := render.Labeller{Labels: in.Labels}

	last, err := action.NewGet(cfg).Run(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return ctrl.Result{}, fmt.Errorf("read Helm release %s: %w", name, err)
	}
	fresh := last == nil || (last.Version == 1 && last.Info.Status != release.StatusDeployed)
	var rel *release.Release
	if fresh {
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace, install.PostRenderer = name, in.Namespace, post
		install.Replace, install.Timeout = last != nil, helmTimeout
		rel, err = install.RunWithContext(ctx, rd.chart, values)
	} else {
		upgrade := action.NewUpgrade(cfg)
		upgrade.Namespace, upgrade.PostRenderer, upgrade.MaxHistory = in.Namespace, post, r.deploy.maxHistory
		upgrade.Timeout = helmTimeout
		rel, err = upgrade.RunWithContext(ctx, name, rd.chart, values)
	}
	if err != nil {
		msg := fmt.Sprintf("Helm could not deploy commit %s as release %s: %v", shortCommit(in.req.Commit), name, err)
		if !fresh {
			msg += r.rollbackHelm(cfg, s, name, st)
		}
		reason := catalystv1.ReasonHelmFailed
		if refused := render.Refusals(cfg.KubeClient); len(refused) > 0 {
			// What Helm was about to send (on this revision: an upgrade's template may differ from the
			// render checked before) holds what the environment may not.
			reason, st.Refused = catalystv1.ReasonObjectsRefused, firstRefusals(refused)
			instruments.Refused(instruments.RefusalPolicy)
		} else if instruments.RefusalCheck(err, false) == instruments.RefusalImpersonation {
			instruments.Refused(instruments.RefusalImpersonation)
		}
		s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, reason, msg)
		s.Warn(reason, msg)
		return ctrl.Result{}, nil
	}
	st.Revision, st.Objects = int32(rel.Version), int32(len(rd.objs))
	r.deploy.remember(s.env, rd)
	s.Normalf(catalystv1.EventDeployed, "Deployed commit %s as Helm release %s revision %d",
		shortCommit(in.req.Commit), name, rel.Version)
	return r.reportReady(ctx, s, rd.objs)
}

// rollbackHelm rolls a release whose upgrade failed back to its last revision, and says how it went. An
// upgrade refused before Helm recorded a revision (the guard or the API server refused what it was about
// to send) left the last revision deployed: there is nothing to roll back.
func (r *deployReconciler) rollbackHelm(cfg *action.Configuration, s *environmentScope, name string, st *catalystv1.DeploymentStatus) string {
	last, err := action.NewGet(cfg).Run(name)
	if err == nil && last.Info.Status == release.StatusDeployed {
		st.Revision = int32(last.Version)
		return fmt.Sprintf("; revision %d stays deployed", last.Version)
	}
	rollback := action.NewRollback(cfg)
	rollback.MaxHistory = r.deploy.maxHistory
	msg := "; rolled back to the last revision"
	if rerr := rollback.Run(name); rerr != nil {
		msg = fmt.Sprintf("; the rollback failed too: %v", rerr)
	} else {
		s.Warnf(catalystv1.EventRolledBack, "Rolled back Helm release %s after a failed upgrade", name)
	}
	if h, herr := action.NewGet(cfg).Run(name); herr == nil {
		st.Revision = int32(h.Version)
	}
	return msg
}

// helmConfig is a Helm action configuration for one namespace that acts as the namespace's tenant
// ServiceAccount: Helm works in that namespace and keeps its release records there (storage driver
// Secrets), and everything it sends or reads (the release's objects, hooks, lookup, the records) is
// authorized by the API server as the tenant, on any revision, install or upgrade alike; and everything
// it sends is checked against policy first.
func (r *deployReconciler) helmConfig(ctx context.Context, ns string, policy render.Policy) (*action.Configuration, error) {
	cfg := tenantConfig(r.deploy.restConfig, ns)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	getter := &restGetter{cfg: cfg, ns: ns, mapper: r.deploy.mapper, dc: memory.NewMemCacheClient(dc)}
	helm := &action.Configuration{}
	log := ctrl.LoggerFrom(ctx).WithName("helm").V(1)
	if err := helm.Init(getter, ns, "secret", func(format string, v ...any) { log.Info(fmt.Sprintf(format, v...)) }); err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	// The guard runs on exactly what Helm sends, hooks and upgrades included (render.GuardKubeClient).
	helm.KubeClient = render.GuardKubeClient(helm.KubeClient, policy)
	return helm, nil
}

// restGetter gives Helm the manager's rest.Config and RESTMapper, in one namespace.
type restGetter struct {
	cfg    *rest.Config
	ns     string
	mapper meta.RESTMapper
	dc     discovery.CachedDiscoveryInterface
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.dc, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(clientcmdapi.Config{}, &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.ns},
	})
}
