package reconcile

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Scoped is a reconcile's scope: a struct that embeds *Session, and so hands Finish its session.
type Scoped interface {
	session() *Session
}

func (s *Session) session() *Session { return s }

// Finish is the one end of a Reconcile: it runs steps on scope in order (Run: every step runs, even after
// one failed), announces what they created and updated, calls status for the status to write, computed
// from what the steps found (Ready's Summarize, observedGeneration), writes it with w (only when the part
// w owns changed) and returns the steps' result with the steps' and the write's errors joined.
func Finish[S Scoped, T any](ctx context.Context, w *StatusWriter, scope S, status func() T, steps ...Step[S]) (ctrl.Result, error) {
	res, err := Run(ctx, scope, steps...)
	s := scope.session()
	s.Announce()
	if werr := w.Write(ctx, s.Owner, status()); werr != nil {
		err = errors.Join(err, werr)
	}
	return res, err
}

// Summarize sets Ready from the part conditions named in order (see Summary) and returns it.
func (s *Session) Summarize(order []string, readyReason, readyMessage string) metav1.Condition {
	ready := Summary(*s.Conditions, order, readyReason, readyMessage)
	s.Set(ConditionReady, ready.Status, ready.Reason, ready.Message)
	return ready
}
