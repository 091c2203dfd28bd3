package reconcile

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/retry"
)

// Reasons the kit sets. API packages export the same strings among their own reasons, since users match
// on them.
const (
	// ReasonApplyFailed is the reason of a part whose child the API server refused or could not take.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonAPINotAvailable is the reason of a part that needs an API this cluster does not serve.
	ReasonAPINotAvailable = "APINotAvailable"
	// ReasonNameConflict is the reason of a part whose child's name is taken by an object the operator
	// did not make, or one another owner (or an earlier owner of the same name) controls.
	ReasonNameConflict = "NameConflict"
)

// Event reasons of the changes the operator makes.
const (
	EventCreated = "Created"
	EventUpdated = "Updated"
	EventDeleted = "Deleted"
)

// RefusedRetry is how soon an owner whose child the API server refused is tried again (retry.Refused,
// where clients below the kit read it).
const RefusedRetry = retry.Refused

// ConflictRetry is how soon an owner whose child's name is taken is tried again (retry.Conflict).
const ConflictRetry = retry.Conflict

// Session is one reconcile of one owner: the conditions it computes, the children it applies, and the
// events it owes the user. A controller makes one per reconcile and hands it from step to step.
type Session struct {
	// Owner is the custom resource being reconciled; events are about it.
	Owner client.Object
	// Conditions is the status' condition list being computed (a copy of the owner's, changed in place).
	Conditions *[]metav1.Condition
	// Before are the owner's conditions as the reconcile read them (not changed by it): a Warning event
	// goes out only when a failure is news against them (Fail, Refuse, WarnOnce, ApplyFailed, MissingAPI),
	// so a retry or a periodic recheck that finds the same failure again emits none.
	Before []metav1.Condition
	// Client reads (for DeleteIfControlled) and names kinds.
	Client client.Client
	// Applier applies children.
	Applier *apply.Applier
	// Recorder emits the events.
	Recorder record.EventRecorder

	created, updated []string
}

// Set records one part's condition for the owner's current generation.
func (s *Session) Set(condType string, status metav1.ConditionStatus, reason, message string) {
	Set(s.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: s.Owner.GetGeneration(),
	})
}

// Drop forgets a part the spec no longer asks for.
func (s *Session) Drop(condType string) { Drop(s.Conditions, condType) }

// Warn emits a Warning event about the owner: a user mistake or a refusal the user must act on.
func (s *Session) Warn(reason, message string) {
	s.Recorder.Event(s.Owner, corev1.EventTypeWarning, reason, message)
}

// Apply applies one child (see apply.Applier.Apply; on success obj holds the live child) and remembers
// whether it was created or updated, for Announce. A failure is reported by ApplyFailed with the kit's
// wording: a name taken by an object that is not the owner's is NameConflict (that object is left
// untouched), a refusal by the API server is ApplyFailed, both with a Warning event and a slow retry;
// other errors set the condition Unknown and are returned. applied is false in these cases: later steps
// that need the child should wait.
func (s *Session) Apply(ctx context.Context, obj client.Object, condType string) (applied bool, res ctrl.Result, err error) {
	return s.ApplyWith(ctx, obj, condType, apply.Options{})
}

// ApplyWith is Apply with where the child is read and written changed by o (apply.Options: a child the
// cache must not hold read from the API server, one sent as someone else): the same wording, events and
// Announce as Apply, without swapping the Session's Applier.
func (s *Session) ApplyWith(ctx context.Context, obj client.Object, condType string, o apply.Options) (applied bool, res ctrl.Result, err error) {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	result, err := s.Applier.ApplyWith(ctx, s.Owner, obj, o)
	switch {
	case err != nil:
		res, err := s.ApplyFailed(condType, obj, err, Refusal{})
		return false, res, err
	case result == apply.Created:
		s.created = append(s.created, kind+" "+obj.GetName())
	case result == apply.Updated:
		s.updated = append(s.updated, kind+" "+obj.GetName())
	}
	return true, ctrl.Result{}, nil
}

// MissingAPI reports a part the cluster cannot provide. Only a spec change or an installed API (and an
// operator restart) fixes it, so it is a condition and a Warning event (once: Refuse), not an error to
// retry.
func (s *Session) MissingAPI(condType, message string) {
	s.Refuse(condType, ReasonAPINotAvailable, message)
}

// DeleteIfControlled removes obj's kind named name in the owner's namespace when the owner controls it:
// a child the spec no longer asks for. An object the owner does not control is someone else's and is
// left alone; one already gone is success.
func (s *Session) DeleteIfControlled(ctx context.Context, obj client.Object, name string) error {
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Owner.GetNamespace(), Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(obj, s.Owner) {
		return nil
	}
	if err := s.Client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
		return err
	}
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := s.Client.GroupVersionKindFor(obj); err == nil {
		kind = gvk.Kind
	}
	s.Recorder.Eventf(s.Owner, corev1.EventTypeNormal, EventDeleted, "Deleted %s %s: the spec no longer asks for it", kind, name)
	return nil
}

// Announce tells the user, in one event per kind of change, what this reconcile created and updated
// ("Created PersistentVolumeClaim n-data, Certificate n, ..."): one API write rather than one per child.
func (s *Session) Announce() {
	if len(s.created) > 0 {
		s.Recorder.Event(s.Owner, corev1.EventTypeNormal, EventCreated, "Created "+strings.Join(s.created, ", "))
	}
	if len(s.updated) > 0 {
		s.Recorder.Event(s.Owner, corev1.EventTypeNormal, EventUpdated, "Updated "+strings.Join(s.updated, ", "))
	}
	s.created, s.updated = nil, nil
}
