package reconcile

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/apply"
)

// Refusal is how a caller words and counts an apply the API server refused; the zero value is the kit's
// wording and no count.
type Refusal struct {
	// Message words the refusal for the condition and the Warning event; nil says
	// "the API server refused <kind> <name>: <the API server's message>".
	Message func(err error) string
	// Observe is told of each refusal (a metric of who refused what); nil counts nothing.
	Observe func(err error)
}

// ApplyFailed reports an apply of obj that failed with err in condType's condition, and returns what the
// reconcile returns. A name taken by an object that is not the owner's (apply.ConflictError) is
// NameConflict with a Warning event, retried after ConflictRetry. A refusal by the API server (invalid,
// forbidden, bad request) is ApplyFailed with a Warning event worded by refusal, retried after
// RefusedRetry instead of an error's fast backoff: a spec change or the cluster's policy fixes it, not a
// retry. Both warn once (Refuse): a retry that meets the same conflict or refusal emits no event. Any
// other error sets the condition Unknown and is returned.
func (s *Session) ApplyFailed(condType string, obj client.Object, err error, refusal Refusal) (ctrl.Result, error) {
	var (
		status   apierrors.APIStatus
		conflict *apply.ConflictError
	)
	switch {
	case errors.As(err, &conflict):
		msg := conflict.Error()
		s.Refuse(condType, ReasonNameConflict, msg)
		return ctrl.Result{RequeueAfter: ConflictRetry}, nil
	case err != nil && (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err)) && errors.As(err, &status):
		msg := fmt.Sprintf("the API server refused %s %s: %s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), status.Status().Message)
		if refusal.Message != nil {
			msg = refusal.Message(err)
		}
		if refusal.Observe != nil {
			refusal.Observe(err)
		}
		s.Refuse(condType, ReasonApplyFailed, msg)
		return ctrl.Result{RequeueAfter: RefusedRetry}, nil
	case err != nil:
		s.Set(condType, metav1.ConditionUnknown, ReasonApplyFailed, err.Error())
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}
