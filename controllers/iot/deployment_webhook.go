package iot

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/admit"
)

// The webhook answers creation, and updates that change the spec of a Deployment not being deleted
// (config/webhook's matchConditions; ValidateUpdate checks the same): a Deployment stored under an older
// policy can still have its labels and finalizers edited, and be deleted, while the operator is down.
// +kubebuilder:webhook:path=/validate-iot-nationtech-io-v1alpha1-deployment,mutating=false,failurePolicy=fail,sideEffects=None,groups=iot.nationtech.io,resources=deployments,verbs=create,versions=v1alpha1,name=vdeployment.iot.nationtech.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-iot-nationtech-io-v1alpha1-deployment,mutating=false,failurePolicy=fail,sideEffects=None,groups=iot.nationtech.io,resources=deployments,verbs=update,versions=v1alpha1,name=vdeployment-update.iot.nationtech.io,admissionReviewVersions=v1

// DeploymentValidator refuses a Deployment outside the operator's Policy: a targetSelector that may
// select devices its namespace may not target, an image from a registry not allowed, or not pinned by
// digest when that is required. It reads nothing but the object.
type DeploymentValidator struct {
	// Policy is the operator's --iot-fleet-policy, --iot-allowed-registries and --iot-require-digest.
	Policy Policy
}

var _ admit.Validator[*iotv1.Deployment] = (*DeploymentValidator)(nil)

// ValidateCreate refuses a Deployment outside the policy.
func (v *DeploymentValidator) ValidateCreate(ctx context.Context, d *iotv1.Deployment) (admission.Warnings, error) {
	return nil, v.validate(ctx, d)
}

// ValidateUpdate refuses a spec change that leaves the Deployment outside the policy. An update that
// keeps the spec, or of a Deployment being deleted, is admitted: the controller reports a Deployment the
// policy refuses since it was stored, and removing its finalizer must stay possible.
func (v *DeploymentValidator) ValidateUpdate(ctx context.Context, old, d *iotv1.Deployment) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, d.Spec) {
		return nil, nil
	}
	if !d.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return nil, v.validate(ctx, d)
}

// ValidateDelete admits every deletion.
func (v *DeploymentValidator) ValidateDelete(context.Context, *iotv1.Deployment) (admission.Warnings, error) {
	return nil, nil
}

func (v *DeploymentValidator) validate(ctx context.Context, d *iotv1.Deployment) error {
	d = admit.WithRequestNamespace(ctx, d)
	if msgs := v.Policy.Violations(d); len(msgs) > 0 {
		return apierrors.NewForbidden(iotv1.GroupVersion.WithResource("deployments").GroupResource(), d.Name,
			fmt.Errorf("%s", strings.Join(msgs, "; ")))
	}
	return nil
}
