package catalyst

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch

// buildPhase is the Environment reconcile's phase that makes sure the registry has the Environment's
// image: it asks the registry, runs a Kaniko Job when the image is missing, and sets status.build and
// BuildReady (buildFields, buildConditions), which the Environment reconciler writes with the rest of the
// status, once, at the end of the reconcile. It runs after the namespace and the Ingress, with the Project
// and namespace they found; the deploy phase runs after it with the image it found.
type buildPhase struct {
	// Build is the operator's build settings: the builder image and the plain-http registries.
	Build catalyst.BuildConfig
	// Pods lists failed build pods, whose status holds the end of the build log.
	Pods corev1client.PodsGetter
	// Client reads from the cache and writes; APIReader reads Secrets and Jobs the cache does not hold.
	Client    client.Client
	APIReader client.Reader
}

// newBuildPhase makes the build phase of r, with a client for build pods' logs from the manager's config
// when r has none.
func newBuildPhase(mgr ctrl.Manager, r *EnvironmentReconciler) (*buildPhase, error) {
	b := &buildPhase{Build: r.Build, Pods: r.Pods, Client: r.Client, APIReader: r.APIReader}
	if b.Pods == nil {
		cs, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return nil, fmt.Errorf("catalyst build log client: %w", err)
		}
		b.Pods = cs.CoreV1()
	}
	return b, nil
}

// retryBuildChanged passes an Environment update that changes the catalyst.catalyst.dev/retry-build
// annotation, which changes no generation but asks for a new build.
var retryBuildChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[catalystv1.AnnotationRetryBuild] != e.ObjectNew.GetAnnotations()[catalystv1.AnnotationRetryBuild]
	},
}

// reconcileBuild makes sure the registry has the image of spec.source.commitSha, tagged with it: when
// the registry has it, nothing is built; otherwise a Kaniko Job in the Project's namespace builds and
// pushes it, and the registry is asked again once the Job succeeds. s.image is set only once the
// registry is known to have the image. A failed build is not retried until the commit or the
// catalyst.catalyst.dev/retry-build annotation changes (status.build remembers it, after the Job is gone).
// Its jobs, in order: what to build with (buildTarget), what status.build carries over (buildStatusOf),
// an image seen before (imageFound), the registry's credentials (registryKeychain), the registry's
// answer (askRegistry), and the build itself (build).
func (r *buildPhase) reconcileBuild(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	if s.waiting(catalystv1.ConditionBuildReady) {
		return ctrl.Result{}, nil
	}
	p := r.buildTarget(s)
	if p == nil {
		s.status.Build = nil
		return ctrl.Result{}, nil
	}
	st := buildStatusOf(s.env, p)
	s.status.Build = st
	defer r.deleteSupersededBuilds(ctx, s, st)

	if st.Image != "" && st.Digest != "" {
		// Seen in the registry already: a commit's tag is not rebuilt, so it is not asked again.
		r.imageFound(ctx, s, p, st, "")
		return ctrl.Result{}, nil
	}
	kc, secrets, err := r.registryKeychain(ctx, s, p)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case kc == nil:
		return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
	}
	digest, answer, res := r.askRegistry(ctx, s, p, kc, secrets)
	switch answer {
	case registryHas:
		r.imageFound(ctx, s, p, st, digest)
		return ctrl.Result{}, nil
	case registryLacks:
		return r.build(ctx, s, p, st, s.env.Annotations[catalystv1.AnnotationRetryBuild], secrets)
	}
	return res, nil
}

// buildTarget is the Project with the build the environment's image comes from: its spec.build, or the
// operator's default registry when it has none (catalyst.WithDefaultBuild), which the steps after see as
// its spec.build. nil, with BuildReady saying why, when there is nothing to find or build: no registry,
// no commit, or a registry the operator may not use.
func (r *buildPhase) buildTarget(s *environmentScope) *catalystv1.Project {
	p := catalyst.WithDefaultBuild(s.project, r.Build)
	b := p.Spec.Build
	switch {
	case b == nil:
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonBuildNotConfigured, fmt.Sprintf(
			"Project %s/%s has no spec.build and the operator no --catalyst-default-registry: there is no registry to find or push the environment's image in",
			p.Namespace, p.Name))
	case s.env.Spec.Source.CommitSHA == "":
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonCommitMissing,
			"spec.source.commitSha is empty: there is no image to find or build until it is set")
	case !catalyst.RegistryAllowed(b.Registry, r.Build.Registries):
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonRegistryNotAllowed, fmt.Sprintf(
			"registry %s is not one the operator may use (--catalyst-registries: %s): it is neither asked for the image nor pushed to",
			b.Registry, strings.Join(r.Build.Registries, ", ")))
	default:
		return p
	}
	return nil
}

// buildStatusOf is status.build for the environment's commit built with p: what the status says of the
// same commit (the Job, its attempts, a failure), without an image seen for another reference.
func buildStatusOf(env *catalystv1.Environment, p *catalystv1.Project) *catalystv1.BuildStatus {
	commit := env.Spec.Source.CommitSHA
	st := &catalystv1.BuildStatus{CommitSHA: commit}
	if prev := env.Status.Build; prev != nil && prev.CommitSHA == commit {
		st = prev.DeepCopy()
	}
	if st.Image != catalyst.ImageReference(p, commit) {
		st.Image, st.Digest = "", ""
	}
	return st
}

// registryAnswer is what askRegistry learnt of an image.
type registryAnswer int

const (
	// registryUnanswered: the registry could not be asked, or refused to say; BuildReady says why.
	registryUnanswered registryAnswer = iota
	// registryHas: the registry has the image.
	registryHas
	// registryLacks: the registry does not have the image, which is then built.
	registryLacks
)

// askRegistry asks p's registry whether it has the environment's image, with the credentials kc (whose
// values, secrets, no message quotes), and returns its digest when it does. When the registry could not
// be asked or refused to say, BuildReady says why and res is when to ask again. Bounded
// (BuildConfig.RegistryTimeout): a registry that does not answer fails this Environment alone, and frees
// the worker for the others.
func (r *buildPhase) askRegistry(ctx context.Context, s *environmentScope, p *catalystv1.Project, kc authn.Keychain,
	secrets []string) (digest string, answer registryAnswer, res ctrl.Result) {
	registry, image := p.Spec.Build.Registry, catalyst.ImageReference(p, s.env.Spec.Source.CommitSHA)
	reg := &catalyst.Registry{Insecure: r.Build.InsecureRegistries, Listed: r.Build.Registries, Timeout: r.Build.RegistryTimeout}
	asked := time.Now()
	digest, found, err := reg.Head(ctx, image, kc)
	instruments.RegistryChecked(err == nil, time.Since(asked))
	switch {
	case errors.Is(err, catalyst.ErrAddressRefused):
		// The registry (or where it pointed) is on an address only an administrator can allow: no retry
		// until the Project or the operator's flags change. The error names addresses, which may change
		// while the refusal does not: s.Fail.
		s.Fail(catalystv1.ConditionBuildReady, catalystv1.ReasonRegistryNotAllowed,
			fmt.Sprintf("registry %s was not asked for %s: %v", registry, image, err))
		return "", registryUnanswered, ctrl.Result{}
	case errors.Is(err, catalyst.ErrUnauthorized):
		// The registry's words may differ from one attempt to the next: s.Fail, once per refusal.
		s.Fail(catalystv1.ConditionBuildReady, catalystv1.ReasonRegistryUnauthorized, fmt.Sprintf(
			"registry %s refused to say whether it has %s: %v; check the registry Secret (%s)", registry, image,
			catalyst.Redact(err.Error(), secrets), registrySecretSource(s.project)))
		return "", registryUnanswered, ctrl.Result{RequeueAfter: r.registryRetry(s, catalystv1.ReasonRegistryUnauthorized)}
	case err != nil:
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonRegistryUnreachable,
			fmt.Sprintf("registry %s could not be asked for %s: %s", registry, image, catalyst.Redact(err.Error(), secrets)))
		return "", registryUnanswered, ctrl.Result{RequeueAfter: r.registryRetry(s, catalystv1.ReasonRegistryUnreachable)}
	case found:
		return digest, registryHas, ctrl.Result{}
	}
	return "", registryLacks, ctrl.Result{}
}

// registrySecretSource says where the registry Secret's name comes from, for messages.
func registrySecretSource(p *catalystv1.Project) string {
	if p.Spec.Build == nil {
		return "--catalyst-default-registry-secret"
	}
	return "spec.build.registrySecretRef"
}

// imageFound records that the registry has the image: BuildReady True, ImageExists when nothing was
// built for it, ImagePushed (and a BuildSucceeded event, once) when a Job of the operator's pushed it.
// An empty digest keeps the one status.build has.
func (r *buildPhase) imageFound(ctx context.Context, s *environmentScope, p *catalystv1.Project, st *catalystv1.BuildStatus, digest string) {
	image := catalyst.ImageReference(p, st.CommitSHA)
	if digest != "" {
		st.Image, st.Digest = image, digest
	}
	st.Failure = ""
	s.image, s.imageDigest = st.Image, st.Digest
	reason, msg := catalystv1.ReasonImageExists, fmt.Sprintf("registry has %s (%s); nothing to build", st.Image, st.Digest)
	if st.JobName != "" {
		reason, msg = catalystv1.ReasonImagePushed, fmt.Sprintf("build Job %s pushed %s (%s)", st.JobName, st.Image, st.Digest)
	}
	if reason == catalystv1.ReasonImagePushed && !reconcile.Said(s.Before, catalystv1.ConditionBuildReady, metav1.ConditionTrue, reason, msg) {
		// Counted once, with the event: the build Job finished and its image is in the registry.
		job := &batchv1.Job{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: st.JobName}, job); err != nil {
			job = nil
		}
		instruments.BuildFinished(true, buildDuration(job))
		s.Normalf(catalystv1.EventBuildSucceeded, "Built and pushed %s with Job %s/%s",
			st.Image, s.project.Namespace, st.JobName)
	}
	s.Set(catalystv1.ConditionBuildReady, metav1.ConditionTrue, reason, msg)
}

// registryKeychain reads the registry Secret's credentials (spec.build.registrySecretRef, or
// --catalyst-default-registry-secret for the default registry; from the API server: the cache holds no
// Secrets), and its values, which no message may quote. A Secret missing or not a Docker config is the
// user's to fix: the condition says so, and a nil keychain is returned (a Secret's creation wakes
// nothing: the caller retries later).
func (r *buildPhase) registryKeychain(ctx context.Context, s *environmentScope, p *catalystv1.Project) (authn.Keychain, []string, error) {
	b := p.Spec.Build
	if b.RegistrySecretRef == nil {
		return authn.NewMultiKeychain(), nil, nil
	}
	from := registrySecretSource(s.project)
	key := client.ObjectKey{Namespace: p.Namespace, Name: b.RegistrySecretRef.Name}
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err):
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonSecretInvalid, fmt.Sprintf("Secret %s named by %s does not exist", key, from))
		return nil, nil, nil
	case err != nil:
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting, "the registry Secret could not be read: "+err.Error())
		return nil, nil, fmt.Errorf("read registry secret %s: %w", key, err)
	}
	secrets := catalyst.SecretValues(secret.Data)
	kc, err := catalyst.Keychain(secret.Data)
	if err != nil {
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonSecretInvalid,
			fmt.Sprintf("Secret %s named by %s: %s", key, from, catalyst.Redact(err.Error(), secrets)))
		return nil, nil, nil
	}
	return kc, secrets, nil
}

// gitSecretValues are the values of the Project's spec.source.secretRef Secret, which the build Job
// reads as environment variables: read only when a build failed, so that its report quotes none of
// them. When it cannot be read, Redact's patterns alone stand guard.
func (r *buildPhase) gitSecretValues(ctx context.Context, p *catalystv1.Project) []string {
	ref := p.Spec.Source.SecretRef
	if ref == nil {
		return nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ref.Name}, secret); err != nil {
		return nil
	}
	return catalyst.SecretValues(secret.Data)
}

// registryRetry is when to ask the registry again, growing with how long BuildReady has had reason.
func (r *buildPhase) registryRetry(s *environmentScope, reason string) time.Duration {
	var failingFor time.Duration
	if prev := meta.FindStatusCondition(s.Before, catalystv1.ConditionBuildReady); prev != nil && prev.Reason == reason {
		failingFor = time.Since(prev.LastTransitionTime.Time)
	}
	return catalyst.RegistryRetry(failingFor)
}
