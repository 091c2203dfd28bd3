package catalyst

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
)

// +kubebuilder:webhook:path=/validate-catalyst-catalyst-dev-v1alpha1-environment,mutating=false,failurePolicy=fail,sideEffects=None,groups=catalyst.catalyst.dev,resources=environments,verbs=create;update,versions=v1alpha1,name=venvironment.catalyst.catalyst.dev,admissionReviewVersions=v1

// EnvironmentValidator refuses an Environment whose namespace (and so whose host, which is the namespace
// under a domain) another Environment already has or would get. It reads Environments from the manager's
// cache by the namespace index, so two Environments created in the same instant may both pass: the
// controller then gives the second NamespaceConflict, as it does when the webhook is not installed.
type EnvironmentValidator struct {
	// Reader lists Environments by namespaceIndex: the manager's cached client.
	Reader client.Reader
}

var _ admission.CustomValidator = (*EnvironmentValidator)(nil)

// ValidateCreate refuses a new Environment whose namespace is taken or reserved.
func (v *EnvironmentValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	env, ok := obj.(*catalystv1.Environment)
	if !ok {
		return nil, fmt.Errorf("expected an Environment, got %T", obj)
	}
	return nil, v.validate(ctx, env)
}

// ValidateUpdate checks an Environment that has no namespace yet as on creation (its labels may have
// changed the name); one that has a namespace keeps it, and a deleted one is never held up.
func (v *EnvironmentValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	env, ok := newObj.(*catalystv1.Environment)
	if !ok {
		return nil, fmt.Errorf("expected an Environment, got %T", newObj)
	}
	if old, ok := oldObj.(*catalystv1.Environment); ok && old.Status.Namespace != "" {
		return nil, nil
	}
	if !env.DeletionTimestamp.IsZero() || env.Status.Namespace != "" {
		return nil, nil
	}
	return nil, v.validate(ctx, env)
}

// ValidateDelete allows every deletion.
func (v *EnvironmentValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (v *EnvironmentValidator) validate(ctx context.Context, env *catalystv1.Environment) error {
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

func invalid(env *catalystv1.Environment, errs ...*field.Error) error {
	return apierrors.NewInvalid(catalystv1.GroupVersion.WithKind("Environment").GroupKind(), env.Name, errs)
}
