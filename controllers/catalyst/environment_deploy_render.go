package catalyst

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/source"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// What a deploy is made of (the commit, the Project's deployment, the image, the environment's settings)
// and its render: fetched, rendered within a time bound, and checked against render.Policy before
// anything is sent.

// deployInput is everything a deploy is made of, and its digest.
type deployInput struct {
	render.Input
	typ    catalystv1.DeploymentType
	req    source.Request
	digest string
}

// renderType is the isolated render of a deployment type.
func renderType(t catalystv1.DeploymentType) render.Type {
	switch t {
	case catalystv1.DeploymentHelm:
		return render.TypeHelm
	case catalystv1.DeploymentKustomize:
		return render.TypeKustomize
	}
	return render.TypeManifests
}

// renderIsolated renders the checkout at dir in a child process bounded in time, output and memory
// (render.Isolated; DeployConfig.Render), at most DeployConfig.MaxConcurrentRenders at once, so that
// the renders together stay within the operator's memory limit (docs/catalyst.md, Budgets). A render
// that overruns is killed, not left running.
func (r *deployPhase) renderIsolated(ctx context.Context, dir string, in *deployInput) ([]*unstructured.Unstructured, *chart.Chart, error) {
	select {
	case r.renders <- struct{}{}:
		defer func() { <-r.renders }()
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	res, err := render.Isolated(ctx, r.Deploy.Render, renderType(in.typ), dir, in.Input)
	if err != nil {
		return nil, nil, err
	}
	return res.Objects, res.Chart, nil
}

// deployInput gathers what the deploy is made of; nil (with the condition set) when the git
// credentials cannot be read.
func (r *deployPhase) deployInput(ctx context.Context, s *environmentScope) (*deployInput, error) {
	p := s.project
	commit := s.env.Spec.Source.CommitSHA
	branch := s.env.Spec.Source.Branch
	if branch == "" {
		branch = p.Spec.Source.Branch
	}
	in := &deployInput{typ: p.Spec.Deployment.Type, req: source.Request{URL: p.Spec.Source.RepositoryURL, Commit: commit, Branch: branch, Namespace: p.Namespace}}
	if ref := p.Spec.Source.SecretRef; ref != nil {
		auth, err := r.gitAuth(ctx, p.Namespace, ref.Name)
		if err != nil {
			var user *userError
			if errors.As(err, &user) {
				s.Refuse(catalystv1.ConditionDeploymentReady, catalystv1.ReasonSecretInvalid, user.msg)
				return nil, nil
			}
			return nil, err
		}
		in.req.Auth = auth
	}
	repo, tag, _ := strings.Cut(s.image, ":")
	if i := strings.LastIndex(s.image, ":"); i > strings.LastIndex(s.image, "/") {
		repo, tag = s.image[:i], s.image[i+1:]
	}
	var values map[string]any
	if v := p.Spec.Deployment.Values; v != nil && len(v.Raw) > 0 {
		if err := json.Unmarshal(v.Raw, &values); err != nil {
			return nil, fmt.Errorf("project %s/%s deployment.values: %w", p.Namespace, p.Name, err)
		}
	}
	in.Input = render.Input{
		Path:      p.Spec.Deployment.Path,
		Namespace: s.namespace,
		Release:   s.env.Name,
		Image:     render.Image{Repository: repo, Tag: tag, Digest: s.imageDigest},
		Host:      catalyst.Host(s.namespace, s.settings.Domain),
		Values:    values,
		Labels:    deployLabels(s.env),
		// An administrator's choice, not the tenant's.
		AllowRemoteBases: r.Deploy.AllowRemoteBases,
	}
	for _, e := range s.env.Spec.Config.EnvVars {
		v := render.EnvVar{Name: e.Name, Value: e.Value}
		if e.SecretKeyRef != nil {
			v = render.EnvVar{Name: e.Name, Secret: e.SecretKeyRef.Name, Key: e.SecretKeyRef.Key}
		}
		in.Env = append(in.Env, v)
	}
	sum := sha256.New()
	// Everything the objects are made of; the Secret's values are not (a Secret-valued env var is only a
	// reference), and neither are the git credentials (they change no content).
	_ = json.NewEncoder(sum).Encode([]any{in.req.URL, in.req.Commit, in.req.Branch, in.typ, in.Input})
	in.digest = hex.EncodeToString(sum.Sum(nil)[:12])
	return in, nil
}

// deployLabels are the labels on every deployed object.
func deployLabels(env *catalystv1.Environment) map[string]string {
	return map[string]string{
		oplabels.ManagedByLabel: oplabels.OperatorName,
		oplabels.PartOfLabel:    oplabels.OperatorName,
		DeployLabel:             env.Name,
	}
}

// userError is a mistake only the user fixes, with the message to show.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

// gitAuth reads the Project's git credentials Secret: token, or username and password.
func (r *deployPhase) gitAuth(ctx context.Context, ns, name string) (*source.Auth, error) {
	sec := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &userError{fmt.Sprintf("Secret %s/%s named by the Project's spec.source.secretRef does not exist", ns, name)}
		}
		return nil, fmt.Errorf("read git credentials %s/%s: %w", ns, name, err)
	}
	if t := sec.Data["token"]; len(t) > 0 {
		return &source.Auth{Username: source.TokenUser, Password: string(t)}, nil
	}
	if u, p := sec.Data["username"], sec.Data["password"]; len(u) > 0 && len(p) > 0 {
		return &source.Auth{Username: string(u), Password: string(p)}, nil
	}
	return nil, &userError{fmt.Sprintf("Secret %s/%s named by the Project's spec.source.secretRef holds neither token nor username and password", ns, name)}
}

// render fetches the commit and renders the deploy, refusing what leaves the namespace. It returns nil
// when it could not (the condition says why); report says whether failures are also reported with
// events (a first attempt) or only as conditions. A fetch retried every fetchRetry warns once per
// failure (s.Fail: the error's text may change from one attempt to the next); a render failure is
// reported once per message (s.Refuse: it says what to fix in the repository).
func (r *deployPhase) render(ctx context.Context, s *environmentScope, in *deployInput, report bool) *rendered {
	fail := func(reason, msg string) {
		switch {
		case !report:
			s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, reason, msg)
		case reason == catalystv1.ReasonFetchFailed:
			s.Fail(catalystv1.ConditionDeploymentReady, reason, msg)
		default:
			s.Refuse(catalystv1.ConditionDeploymentReady, reason, msg)
		}
	}
	var objs []*unstructured.Unstructured
	var ch *chart.Chart
	var renderErr error
	err := r.fetcher.With(ctx, in.req, func(c source.Checkout) error {
		in.req.Commit = c.Commit
		objs, ch, renderErr = r.renderIsolated(ctx, c.Dir, in)
		return nil
	})
	if err != nil {
		fail(catalystv1.ReasonFetchFailed, fmt.Sprintf("commit %s: %v", in.req.Commit, err))
		return nil
	}
	if renderErr != nil {
		var remote *render.RemoteRefusedError
		if report && errors.As(renderErr, &remote) {
			instruments.Refused(instruments.RefusalPolicy)
		}
		fail(catalystv1.ReasonRenderFailed, fmt.Sprintf("commit %s: %v", shortCommit(in.req.Commit), renderErr))
		s.status.Deployment = &catalystv1.DeploymentStatus{Commit: in.req.Commit, Type: in.typ, Image: in.Image.Ref(), Digest: in.digest}
		return nil
	}
	refused := r.policy(in).Check(objs)
	if len(refused) > 0 {
		if report {
			instruments.Refused(instruments.RefusalPolicy)
		}
		shown := refused
		if len(shown) > 32 {
			shown = shown[:32]
		}
		fail(catalystv1.ReasonObjectsRefused, fmt.Sprintf("commit %s holds objects outside the environment's namespace %s; nothing was deployed: %s",
			shortCommit(in.req.Commit), in.Namespace, strings.Join(shown, ", ")))
		s.status.Deployment = &catalystv1.DeploymentStatus{Commit: in.req.Commit, Type: in.typ, Image: in.Image.Ref(), Digest: in.digest, Refused: shown}
		return nil
	}
	render.Sort(objs)
	return &rendered{digest: in.digest, objs: objs, chart: ch}
}

// policy is what a deploy of in may hold (render.Policy): the environment's namespace, names under its
// host, and the ClusterIssuers the operator allows.
func (r *deployPhase) policy(in *deployInput) render.Policy {
	issuers := append([]string{}, r.Defaults.AllowedClusterIssuers...)
	if r.Defaults.Issuer.Name != "" && (r.Defaults.Issuer.Kind == "" || r.Defaults.Issuer.Kind == "ClusterIssuer") {
		issuers = append(issuers, r.Defaults.Issuer.Name)
	}
	return render.Policy{Namespace: in.Namespace, Host: in.Host, Scope: r.scope, ClusterIssuers: issuers}
}

// scope asks the cluster whether a kind is namespaced.
func (r *deployPhase) scope(gvk schema.GroupVersionKind) (bool, error) {
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
