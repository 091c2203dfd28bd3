package reconcile

import (
	"context"
	"reflect"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

func TestListRequests(t *testing.T) {
	ctx := context.Background()
	c, _ := countingClient(t)
	ns, other := newNamespace(t, c), newNamespace(t, c)
	for _, n := range []*ircv1.ErgoNetwork{ergotest.MinimalNetwork(ns, "a"), ergotest.MinimalNetwork(ns, "b"), ergotest.MinimalNetwork(other, "c")} {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}

	// The options narrow the list: only the namespace's networks are requested, each by its key.
	got, err := ListRequests(ctx, c, &ircv1.ErgoNetworkList{}, client.InNamespace(ns))
	want := []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: "a"}}, {NamespacedName: client.ObjectKey{Namespace: ns, Name: "b"}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ListRequests = %v, %v; want %v", got, err, want)
	}

	// Nothing listed, nothing requested (and no error).
	got, err = ListRequests(ctx, c, &ircv1.ErgoNetworkList{}, client.InNamespace(ns), client.MatchingLabels{"none": "x"})
	if err != nil || len(got) != 0 {
		t.Errorf("ListRequests = %v, %v; want none", got, err)
	}

	// A list that fails (an invalid field selector the API server refuses) is the error and no requests.
	got, err = ListRequests(ctx, c, &ircv1.ErgoNetworkList{}, client.MatchingFields{"spec.nothing": "x"})
	if err == nil || got != nil {
		t.Errorf("ListRequests = %v, %v; want an error and no requests", got, err)
	}
}
