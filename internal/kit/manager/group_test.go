package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// indexer records the field indexes a row registers.
type indexer struct{ fields []string }

func (i *indexer) IndexField(_ context.Context, obj client.Object, field string, _ client.IndexerFunc) error {
	i.fields = append(i.fields, kindOf(obj)+" "+field)
	return nil
}

// indexManager is a manager whose only working part is its field indexer (an Index row's setup needs no
// more); anything else it is asked panics on the nil embedded Manager.
type indexManager struct {
	ctrl.Manager
	idx *indexer
}

func (m indexManager) GetFieldIndexer() client.FieldIndexer { return m.idx }

func TestNewGroup(t *testing.T) {
	var ran []string
	row := func(name string, err error, rules ...CacheRule) Reconciler {
		return Reconciler{Name: name,
			Cache: func(platform.Capabilities) []CacheRule { return rules },
			Setup: func(ctrl.Manager, platform.Capabilities) error { ran = append(ran, name); return err }}
	}
	broken := errors.New("broken")
	tests := []struct {
		name     string
		rows     []Row
		wantRows []string
		want     []string // the merged cache
		wantRan  []string
		wantIdx  []string
		wantErr  error
	}{
		{name: "rows' rules together, setups in order",
			rows: []Row{
				SharedCache{Name: "shared", Cache: func(platform.Capabilities) []CacheRule {
					return []CacheRule{{Object: &corev1.ConfigMap{}}}
				}},
				Index{Object: &appsv1.Deployment{}, Field: "g.image", Extract: func(client.Object) []string { return nil }},
				row("Deployment", nil, CacheRule{Object: &appsv1.Deployment{}}),
				Reconciler{Name: "Secret reader", Cache: func(platform.Capabilities) []CacheRule {
					return []CacheRule{{Object: &corev1.Secret{}, Scope: All, Why: "users' Secrets"}}
				}, Setup: func(ctrl.Manager, platform.Capabilities) error { ran = append(ran, "Secret reader"); return nil }}},
			wantRows: []string{"cache shared", "index Deployment g.image", "reconciler Deployment", "reconciler Secret reader"},
			want:     []string{"ConfigMap: Managed", "Deployment: Managed", "Secret: All"},
			wantRan:  []string{"Deployment", "Secret reader"},
			wantIdx:  []string{"Deployment g.image"}},
		{name: "a failing row stops the setup", rows: []Row{row("a", nil), row("b", broken), row("c", nil)},
			wantRows: []string{"reconciler a", "reconciler b", "reconciler c"},
			wantRan:  []string{"a", "b"}, wantErr: broken},
		{name: "no rows", wantRows: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran = nil
			g := NewGroup("g", tt.rows...)
			if g.Name != "g" {
				t.Errorf("name %q", g.Name)
			}
			if !slices.Equal(g.Rows, tt.wantRows) {
				t.Errorf("rows %q, want %q", g.Rows, tt.wantRows)
			}
			got, err := Describe(scheme.Scheme, platform.Capabilities{}, g)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("cache %q, want %q", got, tt.want)
			}
			idx := &indexer{}
			if err := g.Setup(indexManager{idx: idx}, platform.Capabilities{}); !errors.Is(err, tt.wantErr) {
				t.Errorf("setup error %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(ran, tt.wantRan) {
				t.Errorf("ran %q, want %q", ran, tt.wantRan)
			}
			if !slices.Equal(idx.fields, tt.wantIdx) {
				t.Errorf("indexes %q, want %q", idx.fields, tt.wantIdx)
			}
		})
	}
}

// TestRowsSayWhatTheyAre: each kind of row describes itself by its kind, and a row missing what its kind
// needs fails the setup with its name rather than registering half of itself.
func TestRowsSayWhatTheyAre(t *testing.T) {
	validator := func(ctrl.Manager) (admission.CustomValidator, error) { return nil, nil }
	g := NewGroup("g",
		Webhook{For: &corev1.ConfigMap{}, Validator: validator},
		Index{Object: &corev1.Pod{}, Field: "g.node", Extract: func(client.Object) []string { return nil }},
		SharedCache{Name: "g children"},
		Reconciler{Name: "Pod", Setup: func(ctrl.Manager, platform.Capabilities) error { return nil }})
	want := []string{"webhook ConfigMap", "index Pod g.node", "cache g children", "reconciler Pod"}
	if !slices.Equal(g.Rows, want) {
		t.Errorf("rows %q, want %q", g.Rows, want)
	}
	incomplete := []struct {
		row  Row
		want string
	}{
		{Reconciler{Name: "Pod"}, "reconciler Pod has no Setup"},
		{Webhook{For: &corev1.ConfigMap{}}, "webhook ConfigMap needs For and Validator"},
		{Webhook{Validator: validator}, "webhook <nil> needs For and Validator"},
		{Index{Object: &corev1.Pod{}, Field: "g.node"}, `index "g.node" needs Object, Field and Extract`},
	}
	for _, tt := range incomplete {
		err := NewGroup("g", tt.row).Setup(indexManager{idx: &indexer{}}, platform.Capabilities{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%T: setup error %v, want %q", tt.row, err, tt.want)
		}
	}
	failing := Webhook{For: &corev1.ConfigMap{}, Validator: func(ctrl.Manager) (admission.CustomValidator, error) {
		return nil, errors.New("bad policy")
	}}
	if err := NewGroup("g", failing).Setup(nil, platform.Capabilities{}); err == nil || err.Error() != "webhook ConfigMap: bad policy" {
		t.Errorf("a failing validator: setup error %v", err)
	}
}

// TestDefaultRetryIsControllerRuntimes: the --retry-* defaults (DefaultRetry) give the delays of
// controller-runtime's default rate limiter, failure after failure, so the flags change nothing unset.
func TestDefaultRetryIsControllerRuntimes(t *testing.T) {
	ours, theirs := DefaultRetry.rateLimiter(), workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	item := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "x"}}
	for i := range 30 {
		if a, b := ours.When(item), theirs.When(item); a != b {
			t.Fatalf("failure %d: retry after %s, controller-runtime's default %s", i+1, a, b)
		}
	}
	if (Retry{}).rateLimiter() != nil {
		t.Error("the zero Retry must leave controller-runtime's default rate limiter")
	}
	for _, bad := range []Retry{{BaseDelay: time.Second}, {BaseDelay: 2 * time.Second, MaxDelay: time.Second}, {BaseDelay: -1, MaxDelay: 1}} {
		if bad.validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if opts := ControllerOptions(nil, 0); opts.MaxConcurrentReconciles != 1 || opts.RateLimiter != nil {
		t.Errorf("outside a kit manager: %+v, want 1 worker and controller-runtime's rate limiter", opts)
	}
}
