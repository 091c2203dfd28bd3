package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
)

// testScope is a reconcile scope as controllers write theirs: the session embedded.
type testScope struct {
	*Session
	status *ircv1.ErgoNetworkStatus
	ran    []string
}

func TestFinish(t *testing.T) {
	ctx := context.Background()
	c, writes := countingClient(t)
	ns := newNamespace(t, c)
	owner := read(t, c, newNetwork(t, c, ns))
	rec := record.NewFakeRecorder(16)
	newScope := func(cl client.Client) *testScope {
		status := owner.Status.DeepCopy()
		return &testScope{status: status, Session: &Session{Owner: owner, Conditions: &status.Conditions, Client: cl, Recorder: rec,
			Applier: &apply.Applier{Client: cl, FieldOwner: "test"}}}
	}
	errStep := errors.New("config failed")
	applyStep := func(ctx context.Context, s *testScope) (ctrl.Result, error) {
		s.ran = append(s.ran, "apply")
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "finish", OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(owner, ircv1.GroupVersion.WithKind("ErgoNetwork"))}}}
		if ok, res, err := s.Apply(ctx, cm, ircv1.ConditionService); !ok {
			return res, err
		}
		s.Set(ircv1.ConditionService, metav1.ConditionTrue, "Applied", "applied")
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	fail := func(_ context.Context, s *testScope) (ctrl.Result, error) {
		s.ran = append(s.ran, "fail")
		s.Set(ircv1.ConditionConfig, metav1.ConditionFalse, "Broken", "broken")
		return ctrl.Result{RequeueAfter: time.Second}, errStep
	}
	last := func(_ context.Context, s *testScope) (ctrl.Result, error) {
		s.ran = append(s.ran, "last")
		return ctrl.Result{}, nil
	}
	summarize := func(s *testScope) func() *ircv1.ErgoNetworkStatus {
		return func() *ircv1.ErgoNetworkStatus {
			s.status.ObservedGeneration = owner.Generation
			s.Summarize([]string{ircv1.ConditionConfig, ircv1.ConditionService}, "Ready", "running")
			return s.status
		}
	}

	s := newScope(c)
	res, err := Finish(ctx, &StatusWriter{Client: c, FieldOwner: "test/finish", Fields: []string{"observedGeneration"},
		Conditions: []string{"Ready", ircv1.ConditionConfig, ircv1.ConditionService}}, s, summarize(s), applyStep, fail, last)
	if strings.Join(s.ran, ",") != "apply,fail,last" {
		t.Errorf("ran %v, want every step in order", s.ran)
	}
	if !errors.Is(err, errStep) || res.RequeueAfter != time.Second {
		t.Errorf("Finish = %+v, %v; want the soonest requeue and the step's error", res, err)
	}
	got := read(t, c, owner)
	ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	if ready == nil || ready.Reason != "Broken" || ready.ObservedGeneration != owner.Generation || got.Status.ObservedGeneration != owner.Generation {
		t.Errorf("written status %+v, want Ready from the parts and observedGeneration", got.Status)
	}
	if e := <-rec.Events; e != "Normal Created Created ConfigMap finish" {
		t.Errorf("event %q, want the announcement", e)
	}

	// The status write's error is joined to the steps'.
	errWrite := errors.New("status refused")
	refusing := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return errWrite
		},
	})
	s = newScope(refusing)
	before := writes.Load()
	_, err = Finish(ctx, &StatusWriter{Client: refusing, FieldOwner: "test/finish2", Fields: []string{"networkName"}}, s,
		func() *ircv1.ErgoNetworkStatus { s.status.NetworkName = "changed"; return s.status }, fail)
	if !errors.Is(err, errStep) || !errors.Is(err, errWrite) {
		t.Errorf("Finish = %v, want the step's and the write's errors", err)
	}
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes through the refusing client", n)
	}
}

func TestSessionEvents(t *testing.T) {
	rec := record.NewFakeRecorder(8)
	s := &Session{Owner: &ircv1.ErgoNetwork{}, Recorder: rec}
	s.Normal("Connected", "the server answers")
	s.Normalf("Dropped", "dropped %s", "db")
	s.Warnf("Refused", "refused %d", 3)
	s.Event(corev1.EventTypeWarning, "Abandoned", "left")
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := "Normal Connected the server answers|Normal Dropped dropped db|Warning Refused refused 3|Warning Abandoned left"
	if strings.Join(got, "|") != want {
		t.Errorf("events %q, want %q", got, want)
	}
}
