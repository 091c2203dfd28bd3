package metrics

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ReasonOther is the reason label of an error that carries no Kubernetes status reason (or one outside
// errorReasons).
const ReasonOther = "Other"

// errorReasons are the reason label values: the API server's status reasons an error may carry, and
// Other. Anything else (a reason made up by an aggregated API or a webhook) counts as Other, so the
// label stays bounded.
var errorReasons = []string{
	string(metav1.StatusReasonConflict), string(metav1.StatusReasonNotFound), string(metav1.StatusReasonForbidden),
	string(metav1.StatusReasonUnauthorized), string(metav1.StatusReasonAlreadyExists), string(metav1.StatusReasonInvalid),
	string(metav1.StatusReasonBadRequest), string(metav1.StatusReasonTimeout), string(metav1.StatusReasonServerTimeout),
	string(metav1.StatusReasonTooManyRequests), string(metav1.StatusReasonInternalError),
	string(metav1.StatusReasonServiceUnavailable), string(metav1.StatusReasonGone), string(metav1.StatusReasonExpired),
	string(metav1.StatusReasonRequestEntityTooLarge), string(metav1.StatusReasonMethodNotAllowed),
	ReasonOther,
}

// ErrorReason is the reason label of err: its Kubernetes status reason when it is one of errorReasons,
// Other otherwise.
func ErrorReason(err error) string {
	r := string(apierrors.ReasonForError(err))
	for _, known := range errorReasons {
		if r == known {
			return r
		}
	}
	return ReasonOther
}

// instrumented is a reconciler of kind wrapped by Instrument.
type instrumented struct {
	kind   *Kind
	reader Reader
	inner  reconcile.Reconciler
	now    func() time.Time
}

// Instrument wraps a reconciler of kind: every error it returns is counted
// (platform_operator_reconcile_errors_total), and each object is read from reader (the manager's cache)
// before the reconcile to time its generations' readiness (platform_operator_ready_duration_seconds).
// The reconcile itself is unchanged.
func Instrument(kind *Kind, reader Reader, r reconcile.Reconciler) reconcile.Reconciler {
	return &instrumented{kind: kind, reader: reader, inner: r, now: time.Now}
}

func (i *instrumented) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	i.track(ctx, req)
	res, err := i.inner.Reconcile(ctx, req)
	if err != nil {
		reconcileErrors.WithLabelValues(i.kind.Name, ErrorReason(err)).Inc()
	}
	return res, err
}

// track reads the object and tells the kind's readiness tracker about it: what it is now, and whether its
// generation became Ready since the last look. A read that fails otherwise than NotFound tracks nothing:
// the reconcile reports its own errors.
func (i *instrumented) track(ctx context.Context, req ctrl.Request) {
	obj := i.kind.newObject()
	if err := i.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			i.kind.ready.forget(req.NamespacedName)
		}
		return
	}
	st := i.kind.status(obj)
	now := i.now()
	i.kind.ready.see(obj, st, now)
	i.kind.ready.observe(i.kind.Name, obj, st, now)
}
