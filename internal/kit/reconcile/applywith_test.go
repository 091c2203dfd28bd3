package reconcile

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// TestSessionApplyWith: ApplyWith reads the live child through the options (here Live, as the
// SojuBouncer reads its database Secret from the API server), writes it once, and reports it as Apply
// does (Announce); an unchanged child is a read and no write. A Live reader that is never called, or a
// second write, fails the test.
func TestSessionApplyWith(t *testing.T) {
	ctx := context.Background()
	c, writes := countingClient(t)
	ns := newNamespace(t, c)
	owner := read(t, c, newNetwork(t, c, ns))
	rec := record.NewFakeRecorder(4)
	var conds []metav1.Condition
	s := &Session{Owner: owner, Conditions: &conds, Client: c, Recorder: rec,
		Applier: &apply.Applier{Client: c, Reader: c, FieldOwner: "test"}}
	reads := 0
	live := func(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
		reads++
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, key, u); err != nil {
			return nil, err
		}
		return u, nil
	}
	secret := func() *corev1.Secret {
		return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net-db", Labels: map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, ircv1.GroupVersion.WithKind("ErgoNetwork"))}},
			Data: map[string][]byte{"password": []byte("pw")}}
	}

	for i := range 2 {
		before := writes.Load()
		if ok, res, err := s.ApplyWith(ctx, secret(), "DatabaseReady", apply.Options{Live: live}); !ok || err != nil || !res.IsZero() {
			t.Fatalf("apply %d: %v %+v %v", i, ok, res, err)
		}
		if want := int64(1 - i); writes.Load()-before != want {
			t.Errorf("apply %d wrote %d times, want %d", i, writes.Load()-before, want)
		}
		if reads != i+1 {
			t.Errorf("apply %d: the Live reader ran %d times, want %d", i, reads, i+1)
		}
		s.Announce()
	}
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	if len(events) != 1 || events[0] != "Normal Created Created Secret net-db" {
		t.Errorf("events %q, want the one creation", events)
	}
}
