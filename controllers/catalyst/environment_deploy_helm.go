package catalyst

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

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
// its release records in Secrets of the environment's namespace. The Helm action runs in a child
// process (render.HelmAction), bounded like a render and in one of its slots: Helm renders the chart
// again there, with lookup answering and .Release.IsUpgrade set, and its template engine cannot be
// interrupted, so a chart that loops or allocates only there is killed, not run in the operator.
func (r *deployPhase) deployHelm(ctx context.Context, s *environmentScope, in *deployInput, rd *rendered, st *catalystv1.DeploymentStatus) (ctrl.Result, error) {
	name := ReleaseName(in.Release)
	st.Release, st.Inventory = name, nil
	creds, err := render.CredentialsOf(tenantConfig(r.restConfig, in.Namespace))
	if err != nil {
		return ctrl.Result{}, err
	}
	policy := r.policy(in)
	req := render.HelmRequest{Chart: rd.chart.Raw, Input: in.Input, Release: name, Namespace: in.Namespace, Config: creds,
		Host: policy.Host, ClusterIssuers: policy.ClusterIssuers, MaxHistory: r.maxHistory,
		ReleaseBytes: maxReleaseBytes, ReleasesBytes: maxReleasesBytes, HelmTimeout: helmTimeout}
	res, err := r.helmAction(ctx, req)
	if err != nil {
		if !errors.Is(err, render.ErrTimedOut) && !errors.Is(err, render.ErrOutOfMemory) && !errors.Is(err, render.ErrTooLarge) {
			return ctrl.Result{}, err
		}
		// Killed: the chart's templates (or Helm) overran a bound. The revision it left pending is
		// marked failed by the next action (render.HelmAction), which a new commit starts.
		msg := fmt.Sprintf("Helm could not deploy commit %s as release %s: %v", shortCommit(in.req.Commit), name, err)
		reason := catalystv1.ReasonHelmFailed
		if errors.Is(err, render.ErrTimedOut) && strings.Contains(err.Error(), "rendering the chart") || errors.Is(err, render.ErrOutOfMemory) {
			reason = catalystv1.ReasonRenderFailed
		}
		s.Refuse(catalystv1.ConditionDeploymentReady, reason, msg)
		return ctrl.Result{}, nil
	}
	// An action the operator took (a pending revision marked failed, a release rolled back) is told once
	// by the action itself, not by a condition: a plain Warning.
	if res.Recovered > 0 {
		s.Warnf(catalystv1.ReasonHelmFailed, "Helm release %s revision %d was left pending by a stopped action; marked failed", name, res.Recovered)
	}
	switch res.Outcome {
	case render.HelmUnreadable:
		// A release record of the namespace (which the tenant can write) is a decompression bomb, or
		// far beyond what Helm writes: nothing is deployed until it is gone.
		msg := fmt.Sprintf("Helm release %s cannot be read: %s; delete the Secret to deploy again", name, res.Error)
		s.Refuse(catalystv1.ConditionDeploymentReady, catalystv1.ReasonHelmFailed, msg)
		return ctrl.Result{}, nil
	case render.HelmReadFailed:
		return ctrl.Result{}, errors.New(res.Error)
	case render.HelmFailed:
		msg := fmt.Sprintf("Helm could not deploy commit %s as release %s: %s", shortCommit(in.req.Commit), name, res.Error)
		if res.Upgrade {
			msg += res.Rollback
			if res.Revision > 0 {
				st.Revision = int32(res.Revision)
			}
			if res.RolledBack {
				s.Warnf(catalystv1.EventRolledBack, "Rolled back Helm release %s after a failed upgrade", name)
			}
		}
		reason := catalystv1.ReasonHelmFailed
		if len(res.Refused) > 0 {
			// What Helm was about to send (on this revision: an upgrade's template may differ from the
			// render checked before) holds what the environment may not.
			reason, st.Refused = catalystv1.ReasonObjectsRefused, res.Refused
			instruments.Refused(instruments.RefusalPolicy)
		} else if res.Impersonation {
			instruments.Refused(instruments.RefusalImpersonation)
		}
		s.Refuse(catalystv1.ConditionDeploymentReady, reason, msg)
		return ctrl.Result{}, nil
	}
	st.Revision, st.Objects = int32(res.Revision), int32(len(rd.objs))
	r.remember(s.env, rd)
	s.Normalf(catalystv1.EventDeployed, "Deployed commit %s as Helm release %s revision %d",
		shortCommit(in.req.Commit), name, res.Revision)
	return r.reportReady(ctx, s, rd.objs)
}

// helmAction runs req in a child process (render.HelmAction) within the render limits, in one of the
// renders' slots (DeployConfig.MaxConcurrentRenders): the Helm actions and renders together stay within
// the operator's memory limit (docs/catalyst.md, Budgets).
func (r *deployPhase) helmAction(ctx context.Context, req render.HelmRequest) (*render.HelmResult, error) {
	select {
	case r.renders <- struct{}{}:
		defer func() { <-r.renders }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return render.HelmAction(ctx, r.Deploy.Render, req)
}

// Bounds on the Helm release records (Secrets sh.helm.release.v1.*) the operator decodes. Helm's
// storage driver base64-decodes and gunzips each whole into memory: a 1 MiB Secret can inflate to a
// gigabyte. A record Helm writes holds the rendered manifest twice (the release's and the chart's file,
// both within --catalyst-render-max-bytes), and the etcd limit of 1 MiB compressed keeps real records
// far below these. The Helm action's child decodes them (render.BoundedReleases).
const (
	// maxReleaseBytes is the most one release record may decompress to.
	maxReleaseBytes = 32 << 20
	// maxReleasesBytes is the most the records of one read (a release's history, which Helm decodes at
	// once) may decompress to together.
	maxReleasesBytes = 64 << 20
)
