package reconcile

import (
	"fmt"

	cmapiutil "github.com/cert-manager/cert-manager/pkg/api/util"
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Readiness is whether a child does what it was made for, as the child's own controller reports it.
type Readiness struct {
	// Ready is true once it does: a workload rolled out with every replica of its latest spec ready and
	// available, and nothing of an older spec left (kstatus Current); a certificate issued.
	Ready bool
	// Failed is true when waiting will not make it Ready without a change: a rollout past its progress
	// deadline (kstatus Failed).
	Failed bool
	// Message says what is ready, or what it waits for, in its controller's words.
	Message string
}

// DeploymentReady reads a Deployment's rollout with kstatus (sigs.k8s.io/cli-utils), the reading kubectl,
// kpt and Flux share: the Deployment controller has seen the latest spec, every replica runs it, is ready
// and available, none of an older spec is left, and the Deployment reports the rollout complete
// (Progressing: NewReplicaSetAvailable) and Available.
func DeploymentReady(d *appsv1.Deployment) Readiness {
	return workloadReady(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))
}

// StatefulSetReady reads a StatefulSet's rollout with kstatus: the latest spec seen, every replica of
// the current revision ready.
func StatefulSetReady(s *appsv1.StatefulSet) Readiness {
	return workloadReady(s, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
}

// workloadReady computes kstatus on obj as the unstructured object kstatus reads. Typed objects read
// through a client carry no kind, which kstatus needs to pick the kind's rules: gvk sets it.
func workloadReady(obj runtime.Object, gvk schema.GroupVersionKind) Readiness {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return Readiness{Message: fmt.Sprintf("cannot read the %s's status: %v", gvk.Kind, err)}
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	res, err := status.Compute(u)
	if err != nil {
		return Readiness{Message: fmt.Sprintf("cannot read the %s's status: %v", gvk.Kind, err)}
	}
	switch res.Status {
	case status.CurrentStatus:
		return Readiness{Ready: true, Message: res.Message}
	case status.FailedStatus:
		return Readiness{Failed: true, Message: res.Message}
	default:
		// InProgress, Terminating and Unknown all mean: not yet.
		return Readiness{Message: res.Message}
	}
}

// CertificateReady reads cert-manager's Ready condition on a Certificate (cert-manager's apiutil): ready
// once it is True, otherwise cert-manager's message, or that none was written yet.
func CertificateReady(c *cmv1.Certificate) Readiness {
	if cmapiutil.CertificateHasCondition(c, cmv1.CertificateCondition{Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionTrue}) {
		return Readiness{Ready: true, Message: "the certificate is issued"}
	}
	if c != nil {
		if cond := cmapiutil.GetCertificateCondition(c, cmv1.CertificateConditionReady); cond != nil {
			return Readiness{Message: "cert-manager: " + cond.Message}
		}
	}
	return Readiness{Message: "waiting for cert-manager to issue the certificate"}
}
