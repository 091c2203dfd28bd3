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

// buildReconciler makes sure the registry has each Environment's image: it asks the registry, runs a
// Kaniko Job when the image is missing, and reports what it found in status.build and BuildReady, which
// it alone writes (buildFieldOwner). The Environment reconciler runs it after the namespace and the Ingress,
// with the Project and namespace they found, and the deploy after it with the image it found.
type buildReconciler struct {
	// Build is the operator's build settings: the builder image and the plain-http registries.
	Build catalyst.BuildConfig
	// Pods lists failed build pods, whose status holds the end of the build log.
	Pods corev1client.PodsGetter
	// Client reads from the cache and writes; APIReader reads Secrets and Jobs the cache does not hold.
	Client    client.Client
	APIReader client.Reader
}

// newBuildReconciler makes the build reconciler of r, with a client for build pods' logs from the
// manager's config when r has none.
func newBuildReconciler(mgr ctrl.Manager, r *EnvironmentReconciler) (*buildReconciler, error) {
	b := &buildReconciler{Build: r.Build, Pods: r.Pods, Client: r.Client, APIReader: r.APIReader}
	if b.Pods == nil {
		cs, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return nil, fmt.Errorf("catalyst build log client: %w", err)
		}
		b.Pods = cs.CoreV1()
	}
	return b, nil
}

// Reconcile runs the build step: it sets the build's part of the status (buildFields, buildConditions),
// which the Environment reconciler writes with the rest, once, at the end of the reconcile.
func (r *buildReconciler) Reconcile(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	return r.reconcileBuild(ctx, s)
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
// A Project without spec.build uses the operator's default registry (catalyst.WithDefaultBuild), which
// the steps below see as its spec.build.
func (r *buildReconciler) reconcileBuild(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	if s.waiting(catalystv1.ConditionBuildReady) {
		return ctrl.Result{}, nil
	}
	p := catalyst.WithDefaultBuild(s.project, r.Build)
	b := p.Spec.Build
	commit := s.env.Spec.Source.CommitSHA
	if b == nil {
		s.status.Build = nil
		r.buildFailed(s, catalystv1.ReasonBuildNotConfigured, fmt.Sprintf(
			"Project %s/%s has no spec.build and the operator no --catalyst-default-registry: there is no registry to find or push the environment's image in",
			p.Namespace, p.Name))
		return ctrl.Result{}, nil
	}
	if commit == "" {
		s.status.Build = nil
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonCommitMissing,
			"spec.source.commitSha is empty: there is no image to find or build until it is set")
		return ctrl.Result{}, nil
	}
	if !catalyst.RegistryAllowed(b.Registry, r.Build.Registries) {
		s.status.Build = nil
		r.buildFailed(s, catalystv1.ReasonRegistryNotAllowed, fmt.Sprintf(
			"registry %s is not one the operator may use (--catalyst-registries: %s): it is neither asked for the image nor pushed to",
			b.Registry, strings.Join(r.Build.Registries, ", ")))
		return ctrl.Result{}, nil
	}
	image := catalyst.ImageReference(p, commit)
	retry := s.env.Annotations[catalystv1.AnnotationRetryBuild]
	st := &catalystv1.BuildStatus{CommitSHA: commit}
	if prev := s.env.Status.Build; prev != nil && prev.CommitSHA == commit {
		st = prev.DeepCopy()
	}
	if st.Image != image {
		st.Image, st.Digest = "", ""
	}
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
	// Bounded (BuildConfig.RegistryTimeout): a registry that does not answer fails this Environment
	// alone, and frees the worker for the others.
	reg := &catalyst.Registry{Insecure: r.Build.InsecureRegistries, Listed: r.Build.Registries, Timeout: r.Build.RegistryTimeout}
	asked := time.Now()
	digest, found, err := reg.Head(ctx, image, kc)
	instruments.RegistryChecked(err == nil, time.Since(asked))
	switch {
	case errors.Is(err, catalyst.ErrAddressRefused):
		// The registry (or where it pointed) is on an address only an administrator can allow: no retry
		// until the Project or the operator's flags change.
		r.buildFailed(s, catalystv1.ReasonRegistryNotAllowed, fmt.Sprintf("registry %s was not asked for %s: %v", b.Registry, image, err))
		return ctrl.Result{}, nil
	case errors.Is(err, catalyst.ErrUnauthorized):
		msg := fmt.Sprintf("registry %s refused to say whether it has %s: %v; check the registry Secret (%s)", b.Registry, image,
			catalyst.Redact(err.Error(), secrets), registrySecretSource(s.project))
		r.buildFailed(s, catalystv1.ReasonRegistryUnauthorized, msg)
		return ctrl.Result{RequeueAfter: r.registryRetry(s, catalystv1.ReasonRegistryUnauthorized)}, nil
	case err != nil:
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonRegistryUnreachable,
			fmt.Sprintf("registry %s could not be asked for %s: %s", b.Registry, image, catalyst.Redact(err.Error(), secrets)))
		return ctrl.Result{RequeueAfter: r.registryRetry(s, catalystv1.ReasonRegistryUnreachable)}, nil
	case found:
		r.imageFound(ctx, s, p, st, digest)
		return ctrl.Result{}, nil
	}
	return r.build(ctx, s, p, st, retry, secrets)
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
func (r *buildReconciler) imageFound(ctx context.Context, s *environmentScope, p *catalystv1.Project, st *catalystv1.BuildStatus, digest string) {
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
	if prev := meta.FindStatusCondition(s.env.Status.Conditions, catalystv1.ConditionBuildReady); reason == catalystv1.ReasonImagePushed &&
		(prev == nil || prev.Reason != reason || prev.Message != msg) {
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
func (r *buildReconciler) registryKeychain(ctx context.Context, s *environmentScope, p *catalystv1.Project) (authn.Keychain, []string, error) {
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
		r.buildFailed(s, catalystv1.ReasonSecretInvalid, fmt.Sprintf("Secret %s named by %s does not exist", key, from))
		return nil, nil, nil
	case err != nil:
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting, "the registry Secret could not be read: "+err.Error())
		return nil, nil, fmt.Errorf("read registry secret %s: %w", key, err)
	}
	secrets := catalyst.SecretValues(secret.Data)
	kc, err := catalyst.Keychain(secret.Data)
	if err != nil {
		r.buildFailed(s, catalystv1.ReasonSecretInvalid, fmt.Sprintf("Secret %s named by %s: %s", key, from, catalyst.Redact(err.Error(), secrets)))
		return nil, nil, nil
	}
	return kc, secrets, nil
}

// gitSecretValues are the values of the Project's spec.source.secretRef Secret, which the build Job
// reads as environment variables: read only when a build failed, so that its report quotes none of
// them. When it cannot be read, Redact's patterns alone stand guard.
func (r *buildReconciler) gitSecretValues(ctx context.Context, p *catalystv1.Project) []string {
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

// buildFailed sets BuildReady False with a reason only the user fixes, and emits a Warning event when
// the condition says something new (not on every reconcile of an unchanged environment).
func (r *buildReconciler) buildFailed(s *environmentScope, reason, msg string) {
	prev := meta.FindStatusCondition(s.env.Status.Conditions, catalystv1.ConditionBuildReady)
	if prev == nil || prev.Reason != reason || prev.Message != msg {
		s.Warn(reason, msg)
	}
	s.Set(catalystv1.ConditionBuildReady, metav1.ConditionFalse, reason, msg)
}

// registryRetry is when to ask the registry again, growing with how long BuildReady has had reason.
func (r *buildReconciler) registryRetry(s *environmentScope, reason string) time.Duration {
	var failingFor time.Duration
	if prev := meta.FindStatusCondition(s.env.Status.Conditions, catalystv1.ConditionBuildReady); prev != nil && prev.Reason == reason {
		failingFor = time.Since(prev.LastTransitionTime.Time)
	}
	return catalyst.RegistryRetry(failingFor)
}
