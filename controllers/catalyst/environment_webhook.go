package catalyst

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/kit/admit"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// One webhook per operation, all served at the same path: config/webhook adds matchConditions to the
// update and delete ones (so that the API server calls them only when the answer can be no), and OLM,
// whose webhookdefinitions have no matchConditions, gets them with failurePolicy Ignore instead
// (config/manifests), so that a stopped operator never blocks removing a finalizer or deleting a preview.
// +kubebuilder:webhook:path=/validate-catalyst-catalyst-dev-v1alpha1-environment,mutating=false,failurePolicy=fail,sideEffects=None,groups=catalyst.catalyst.dev,resources=environments,verbs=create,versions=v1alpha1,name=venvironment.catalyst.catalyst.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-catalyst-catalyst-dev-v1alpha1-environment,mutating=false,failurePolicy=fail,sideEffects=None,groups=catalyst.catalyst.dev,resources=environments,verbs=update,versions=v1alpha1,name=venvironment-update.catalyst.catalyst.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-catalyst-catalyst-dev-v1alpha1-environment,mutating=false,failurePolicy=fail,sideEffects=None,groups=catalyst.catalyst.dev,resources=environments,verbs=delete,versions=v1alpha1,name=venvironment-delete.catalyst.catalyst.dev,admissionReviewVersions=v1

// EnvironmentValidator refuses an Environment whose namespace (and so whose host, which is the namespace
// under a domain) another Environment already has or would get, or whose Project, in another namespace,
// does not allow the Environment's namespace; and the deletion of a deployment Environment without the
// catalyst.dev/allow-deletion annotation. It reads Environments from the manager's cache by the namespace
// index, so two Environments created in the same instant may both pass: the controller then gives the
// second NamespaceConflict, as it does when the webhook is not installed. Projects come from the cache
// too; the controller checks the reference again on every reconcile.
type EnvironmentValidator struct {
	// Reader lists Environments by namespaceIndex and reads Projects: the manager's cached client.
	Reader client.Reader
	// APIReader reads a Project from the API server when the cache does not show it allowing the
	// Environment: a Project created (or allowed) a moment before its Environment may not be in the cache
	// yet, and an Environment must not be refused for the cache's lag. Nil reads the cache only.
	APIReader client.Reader
}

var _ admit.Validator[*catalystv1.Environment] = (*EnvironmentValidator)(nil)

// ValidateCreate refuses a new Environment whose namespace is taken or reserved, or whose Project does
// not allow it.
func (v *EnvironmentValidator) ValidateCreate(ctx context.Context, env *catalystv1.Environment) (admission.Warnings, error) {
	return nil, v.validate(ctx, env)
}

// ValidateUpdate checks an Environment that has no namespace yet as on creation (its labels or its
// projectRef may have changed); one that has a namespace keeps it (the controller checks its Project on
// every reconcile), and a deleted one is never held up.
func (v *EnvironmentValidator) ValidateUpdate(ctx context.Context, old, env *catalystv1.Environment) (admission.Warnings, error) {
	if old.Status.Namespace != "" {
		return nil, nil
	}
	if !env.DeletionTimestamp.IsZero() || env.Status.Namespace != "" {
		return nil, nil
	}
	return nil, v.validate(ctx, env)
}

// ValidateDelete refuses to delete a deployment (staging, production) Environment unless it carries the
// annotation catalyst.dev/allow-deletion: "true"; previews are deleted freely.
func (v *EnvironmentValidator) ValidateDelete(_ context.Context, env *catalystv1.Environment) (admission.Warnings, error) {
	if !deletionProtected(env) {
		return nil, nil
	}
	return nil, apierrors.NewForbidden(catalystv1.GroupVersion.WithResource("environments").GroupResource(), env.Name, fmt.Errorf(
		"an Environment of type deployment (staging or production) is protected from deletion: "+
			"set the annotation %s: \"true\" on it, then delete it", catalystv1.AnnotationAllowDeletion))
}

// deletionProtected says whether env may not be deleted: a deployment Environment without the
// annotation catalyst.dev/allow-deletion: "true". config/webhook's matchConditions say the same in CEL.
func deletionProtected(env *catalystv1.Environment) bool {
	return env.Spec.Type == catalystv1.EnvironmentDeployment && env.Annotations[catalystv1.AnnotationAllowDeletion] != "true"
}

func (v *EnvironmentValidator) validate(ctx context.Context, env *catalystv1.Environment) error {
	env = admit.WithRequestNamespace(ctx, env)
	if err := v.validateProjectRef(ctx, env); err != nil {
		return err
	}
	ns := catalyst.PartsOf(env).Namespace()
	path := field.NewPath("metadata", "labels")
	if catalyst.Reserved(ns) {
		return invalid(env, field.Invalid(path, env.Labels, fmt.Sprintf(
			"the environment's namespace would be %s, which is reserved for the cluster (default, kube-*, openshift-*)", ns)))
	}
	var list catalystv1.EnvironmentList
	if err := v.Reader.List(ctx, &list, client.MatchingFields{namespaceIndex: ns}); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("list environments: %w", err))
	}
	var others []string
	for _, o := range list.Items {
		if o.UID == env.UID && env.UID != "" || (o.Namespace == env.Namespace && o.Name == env.Name) {
			continue
		}
		others = append(others, o.Namespace+"/"+o.Name)
	}
	if len(others) == 0 {
		return nil
	}
	return invalid(env, field.Duplicate(path, fmt.Sprintf(
		"namespace %s (and its host %s.<domain>) already belongs to Environment %s: team, project and environment "+
			"(labels catalyst.dev/team, catalyst.dev/project, catalyst.dev/environment, else the Project's namespace, "+
			"spec.projectRef.name and the name) must name a different namespace",
		ns, ns, strings.Join(others, ", "))))
}

// validateProjectRef refuses a reference to a Project in another namespace that does not list the
// Environment's namespace in spec.allowedEnvironmentNamespaces, or does not exist there (the same answer,
// so that a tenant cannot probe another namespace for Project names).
func (v *EnvironmentValidator) validateProjectRef(ctx context.Context, env *catalystv1.Environment) error {
	key := client.ObjectKey{Namespace: catalyst.PartsOf(env).ProjectNamespace, Name: env.Spec.ProjectRef.Name}
	if key.Namespace == env.Namespace {
		return nil
	}
	ok, err := reconcile.Accepted(ctx, v.Reader, v.APIReader, key, func() *catalystv1.Project { return &catalystv1.Project{} },
		func(p *catalystv1.Project) bool { return catalyst.ProjectAllows(p, env.Namespace) })
	switch {
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("project: %w", err))
	case ok:
		return nil
	}
	return invalid(env, field.Forbidden(field.NewPath("spec", "projectRef", "namespace"), projectNotAllowedMessage(key, env.Namespace)))
}

func invalid(env *catalystv1.Environment, errs ...*field.Error) error {
	return apierrors.NewInvalid(catalystv1.GroupVersion.WithKind("Environment").GroupKind(), env.Name, errs)
}
