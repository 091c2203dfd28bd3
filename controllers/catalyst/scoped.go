package catalyst

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// scopedWebhook is the Environment validator of an operator limited to some namespaces, whose catalyst
// group is that webhook alone: no controller (an Environment's namespace is outside them, and so are the
// quota, policy and ingress in it), and a webhook that refuses new Environments with the reason, rather
// than letting them wait for a status that never comes. The rest of the operator runs as usual.
func scopedWebhook(namespaces []string) admission.CustomValidator {
	ctrl.Log.WithName("catalyst").Info("Catalyst controllers not started: the operator watches only some namespaces, "+
		"and Environments make namespaces of their own; install it for all namespaces to use them", "namespaces", namespaces)
	return scopedValidator{namespaces: namespaces}
}

// scopedValidator refuses to create Environments. Updates pass, so that an Environment made while the
// operator watched the whole cluster can still be edited and have its finalizer removed.
type scopedValidator struct {
	namespaces []string
}

// ValidateCreate refuses every new Environment, naming the namespaces the operator is limited to.
func (v scopedValidator) ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, fmt.Errorf("an Environment needs platform-operator installed for all namespaces (OLM install mode AllNamespaces): "+
		"this one watches only %s, and an Environment makes a namespace of its own", strings.Join(v.namespaces, ", "))
}

// ValidateUpdate lets every update through.
func (scopedValidator) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete lets every deletion through.
func (scopedValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}
