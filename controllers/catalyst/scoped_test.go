package catalyst

import (
	"context"
	"slices"
	"strings"
	"testing"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// An operator limited to some namespaces caches nothing for the group (a Namespace informer would need
// cluster-wide permissions it does not have, and the manager would never start) and refuses new
// Environments with the reason, while updates and deletions still pass.
func TestScopedGroup(t *testing.T) {
	caps := platform.Capabilities{CertManager: true}
	if rules := Group(Options{}).Cache(caps); len(rules) == 0 {
		t.Fatal("an operator watching the whole cluster caches the group's children")
	}
	scoped := Group(Options{WatchNamespaces: []string{"team-a", "team-b"}})
	if rules := scoped.Cache(caps); len(rules) != 0 {
		t.Errorf("a scoped operator caches %d kinds for catalyst, want none", len(rules))
	}
	if want := []string{"webhook Environment"}; !slices.Equal(scoped.Rows, want) {
		t.Errorf("a scoped operator's catalyst table is %q, want %q", scoped.Rows, want)
	}
	want := []string{"cache catalyst children", "index Environment " + namespaceIndex, "index Environment " + projectIndex,
		"reconciler Environment", "reconciler Project", "webhook Environment"}
	if got := Group(Options{}).Rows; !slices.Equal(got, want) {
		t.Errorf("the catalyst table is %q, want %q", got, want)
	}

	v := scopedValidator{namespaces: []string{"team-a", "team-b"}}
	env := &catalystv1.Environment{}
	_, err := v.ValidateCreate(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "AllNamespaces") || !strings.Contains(err.Error(), "team-a, team-b") {
		t.Errorf("create: %v, want a refusal naming AllNamespaces and the watched namespaces", err)
	}
	if _, err := v.ValidateUpdate(context.Background(), env, env); err != nil {
		t.Errorf("update refused: %v", err)
	}
	if _, err := v.ValidateDelete(context.Background(), env); err != nil {
		t.Errorf("delete refused: %v", err)
	}
}
