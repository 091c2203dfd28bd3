package reconcile

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operator/platform-operator/internal/kit/apply"
)

// TestApplyFailed: the one classification of a failed apply, as Session.Apply and the Catalyst deploy
// use it. A refusal is a condition, a Warning event and a slow retry, worded and counted by the caller
// when it says how; a taken name is NameConflict; anything else (a 409 of the API server included) is
// Unknown and returned, so that the reconcile retries with backoff.
func TestApplyFailed(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	forbidden := apierrors.NewForbidden(gr, "child", errors.New("no RBAC rule allows it"))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "child",
		field.ErrorList{field.Invalid(field.NewPath("data"), "x", "too large")})
	badRequest := apierrors.NewBadRequest("the body is not an object")
	taken := &apply.ConflictError{Kind: "ConfigMap", Name: "child", Why: "is controlled by Thing other"}
	unavailable := apierrors.NewServiceUnavailable("etcd is away")
	stale := apierrors.NewConflict(gr, "child", errors.New("the object has been modified"))
	observed := 0
	custom := Refusal{Message: func(err error) string { return "the tenant may not: " + err.Error() },
		Observe: func(error) { observed++ }}

	tests := []struct {
		name     string
		err      error
		refusal  Refusal
		status   metav1.ConditionStatus
		reason   string
		message  string // the condition's message, and the event's when event is set
		event    string // the Warning event's reason; empty when none is wanted
		res      ctrl.Result
		returned bool // the error is returned to the reconcile
		observed int
	}{
		{name: "a name taken by someone else's object", err: taken, status: metav1.ConditionFalse, reason: ReasonNameConflict,
			message: taken.Error(), event: ReasonNameConflict, res: ctrl.Result{RequeueAfter: ConflictRetry}},
		{name: "a wrapped conflict error", err: fmt.Errorf("step: %w", taken), status: metav1.ConditionFalse, reason: ReasonNameConflict,
			message: taken.Error(), event: ReasonNameConflict, res: ctrl.Result{RequeueAfter: ConflictRetry}},
		{name: "forbidden, in the kit's words", err: forbidden, status: metav1.ConditionFalse, reason: ReasonApplyFailed,
			message: "the API server refused ConfigMap child: " + forbidden.Status().Message, event: ReasonApplyFailed,
			res: ctrl.Result{RequeueAfter: RefusedRetry}},
		{name: "invalid, in the kit's words", err: invalid, status: metav1.ConditionFalse, reason: ReasonApplyFailed,
			message: "the API server refused ConfigMap child: " + invalid.Status().Message, event: ReasonApplyFailed,
			res: ctrl.Result{RequeueAfter: RefusedRetry}},
		{name: "bad request, in the caller's words and counted", err: badRequest, refusal: custom, status: metav1.ConditionFalse,
			reason: ReasonApplyFailed, message: "the tenant may not: " + badRequest.Error(), event: ReasonApplyFailed,
			res: ctrl.Result{RequeueAfter: RefusedRetry}, observed: 1},
		{name: "a wrapped refusal is still a refusal", err: fmt.Errorf("apply ConfigMap ns/child: %w", forbidden), refusal: custom,
			status: metav1.ConditionFalse, reason: ReasonApplyFailed,
			message: "the tenant may not: apply ConfigMap ns/child: " + forbidden.Error(), event: ReasonApplyFailed,
			res: ctrl.Result{RequeueAfter: RefusedRetry}, observed: 1},
		// The hostile cases: errors a retry may fix are neither refusals nor name conflicts.
		{name: "the API server unavailable", err: unavailable, refusal: custom, status: metav1.ConditionUnknown,
			reason: ReasonApplyFailed, message: unavailable.Error(), returned: true},
		{name: "a stale write (409) is not a taken name", err: stale, refusal: custom, status: metav1.ConditionUnknown,
			reason: ReasonApplyFailed, message: stale.Error(), returned: true},
		{name: "an error without a status", err: errors.New("connection reset"), refusal: custom, status: metav1.ConditionUnknown,
			reason: ReasonApplyFailed, message: "connection reset", returned: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", Generation: 3}}
			obj := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child"}}
			var conditions []metav1.Condition
			rec := record.NewFakeRecorder(4)
			s := &Session{Owner: owner, Conditions: &conditions, Recorder: rec}
			observed = 0

			res, err := s.ApplyFailed("Part", obj, tc.err, tc.refusal)
			if res != tc.res {
				t.Errorf("result %+v, want %+v", res, tc.res)
			}
			if (err != nil) != tc.returned || (err != nil && !errors.Is(err, tc.err)) {
				t.Errorf("returned %v, want the error returned %v", err, tc.returned)
			}
			c := meta.FindStatusCondition(conditions, "Part")
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 3 {
				t.Errorf("condition %+v, want %s %s %q at generation 3", c, tc.status, tc.reason, tc.message)
			}
			wantEvents := 0
			if tc.event != "" {
				wantEvents = 1
				if got := <-rec.Events; got != "Warning "+tc.event+" "+tc.message {
					t.Errorf("event %q, want a Warning %s saying %q", got, tc.event, tc.message)
				}
			}
			if extra := len(rec.Events); extra != 0 {
				t.Errorf("%d events more than the %d wanted", extra, wantEvents)
			}
			if observed != tc.observed {
				t.Errorf("observed %d refusals, want %d", observed, tc.observed)
			}

			// The next reconcile meets the same failure (the first pass, which warned, is its control):
			// the condition says it already, so no Warning again.
			again := append([]metav1.Condition(nil), conditions...)
			s = &Session{Owner: owner, Conditions: &again, Before: conditions, Recorder: rec}
			_, _ = s.ApplyFailed("Part", obj, tc.err, tc.refusal)
			if n := len(rec.Events); n != 0 {
				t.Errorf("the same failure found again: %d Warning events, want none (%s)", n, <-rec.Events)
			}
		})
	}
}
