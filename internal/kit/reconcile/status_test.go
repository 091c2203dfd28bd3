package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestOwnedStatus(t *testing.T) {
	w := &StatusWriter{Fields: []string{"observedGeneration", "routeHost"}, Conditions: []string{"Ready", "RouteReady"}}
	cond := func(typ, status, at string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": "R", "message": "", "lastTransitionTime": at}
	}
	status := map[string]any{
		"observedGeneration": int64(2), "routeHost": "h", "ports": []any{"theirs"},
		"conditions": []any{cond("RouteReady", "True", "t1"), cond("FleetSynced", "True", "t1"), cond("Ready", "True", "t1")},
	}
	owned := w.project(status)
	if _, ok := owned["ports"]; ok {
		t.Error("a field the writer does not own was kept")
	}
	if got := owned["conditions"].([]any); len(got) != 2 || got[0].(map[string]any)["type"] != "RouteReady" {
		t.Errorf("owned conditions %v, want RouteReady and Ready in their order", got)
	}
	reordered := w.project(map[string]any{"observedGeneration": int64(2), "routeHost": "h",
		"conditions": []any{cond("Ready", "True", "t2"), cond("RouteReady", "True", "t2")}})

	tests := []struct {
		name string
		a, b map[string]any
		same bool
	}{
		{"the same status in another order, later transition times", sorted(owned), sorted(reordered), true},
		{"a changed field", sorted(owned), sorted(w.project(map[string]any{"observedGeneration": int64(3), "routeHost": "h",
			"conditions": []any{cond("Ready", "True", "t1"), cond("RouteReady", "True", "t1")}})), false},
		{"a dropped condition", sorted(owned), sorted(w.project(map[string]any{"observedGeneration": int64(2), "routeHost": "h",
			"conditions": []any{cond("Ready", "True", "t1")}})), false},
		{"a changed condition status", sorted(owned), sorted(w.project(map[string]any{"observedGeneration": int64(2), "routeHost": "h",
			"conditions": []any{cond("Ready", "False", "t1"), cond("RouteReady", "True", "t1")}})), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if same := digest(tt.a) == digest(tt.b); same != tt.same {
				t.Errorf("same digest = %v, want %v", same, tt.same)
			}
		})
	}
}

func TestLagging(t *testing.T) {
	var w StatusWriter
	key := types.NamespacedName{Namespace: "ns", Name: "n"}
	if w.lagging(key, statusWrite{uid: "u1", before: 1, after: 2}) {
		t.Fatal("a writer that wrote nothing must not hold a write back")
	}
	w.remember(key, statusWrite{uid: "u1", before: 1, after: 2})
	tests := []struct {
		name string
		w    statusWrite
		want bool
	}{
		{"the cache still shows the replaced status, the same status is wanted", statusWrite{"u1", 1, 2}, true},
		{"a different status is wanted", statusWrite{"u1", 1, 3}, false},
		{"the cache shows someone else's status", statusWrite{"u1", 4, 2}, false},
		{"a recreated object of the same name", statusWrite{"u2", 1, 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.lagging(key, tt.w); got != tt.want {
				t.Errorf("lagging = %v, want %v", got, tt.want)
			}
		})
	}
	w.Forget(key)
	if w.lagging(key, statusWrite{"u1", 1, 2}) {
		t.Error("a forgotten object must not hold a write back")
	}
}
