package apply

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// sentApply is one apply request as the writer received it.
type sentApply struct {
	resourceVersion string
	dryRun          bool
}

// TestApplyWithLiveAndWriter: an object read through Options.Live and written through Options.Writer (the
// Catalyst deploy's tenant path) is judged like a cached child: a missing one is sent create-only as the
// writer, one that holds every field costs no request, one the operator did not make is left untouched,
// and the Applier's own client is never used.
func TestApplyWithLiveAndWriter(t *testing.T) {
	owner := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "owners", Name: "owner", UID: "owner-uid"}}
	desired := func(data string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "ns", "name": "child",
				"labels": map[string]any{oplabels.ManagedByLabel: oplabels.OperatorName}},
			"data": map[string]any{"k": data},
		}}
		return u
	}
	// live is the object as the API server keeps it after applying desired(data).
	live := func(data string, managed bool) *unstructured.Unstructured {
		u, err := ToUnstructured(desired(data))
		if err != nil {
			t.Fatal(err)
		}
		u.SetUID("child-uid")
		u.SetResourceVersion("5")
		if !managed {
			u.SetLabels(nil)
		}
		return u
	}
	errRead := errors.New("the tenant may not read configmaps")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "child", errors.New("the object has been modified"))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "child", errors.New("no RBAC rule allows it"))

	tests := []struct {
		name     string
		live     *unstructured.Unstructured // nil: NotFound
		liveErr  error
		dryRun   bool
		answer   error // what the writer answers a create-only apply
		want     Result
		sent     []sentApply
		conflict string // part of the ConflictError's message, when one is wanted
		wantErr  func(error) bool
	}{
		{name: "missing: one create-only apply as the writer", want: Created,
			sent: []sentApply{{resourceVersion: createOnlyVersion}}},
		{name: "ours and unchanged: no request", live: live("v", true), want: Unchanged},
		{name: "ours and drifted: one apply, not create-only", live: live("drifted", true), want: Updated,
			sent: []sentApply{{}}},
		// The hostile case of the two above: the same object without the operator's label.
		{name: "not made by the operator: left untouched", live: live("v", false),
			conflict: "was not made by the operator"},
		{name: "dry run of a missing object: a plain dry-run apply", dryRun: true, want: Created,
			sent: []sentApply{{dryRun: true}}},
		{name: "dry run of a drifted object: a dry-run apply", dryRun: true, live: live("drifted", true), want: Updated,
			sent: []sentApply{{dryRun: true}}},
		{name: "dry run of an unchanged object: no request", dryRun: true, live: live("v", true), want: Unchanged},
		{name: "made by someone else in between: the create-only apply is refused and nothing taken over", answer: conflict,
			sent: []sentApply{{resourceVersion: createOnlyVersion}}, conflict: "was made by someone else while the operator was creating it"},
		{name: "an error of Live is returned as it is", liveErr: errRead,
			wantErr: func(err error) bool { return errors.Is(err, errRead) && err.Error() == errRead.Error() }},
		{name: "a refusal of the writer is the API server's error, naming the object", answer: forbidden,
			sent: []sentApply{{resourceVersion: createOnlyVersion}},
			wantErr: func(err error) bool {
				return apierrors.IsForbidden(err) && strings.HasPrefix(err.Error(), "apply ConfigMap ns/child: ")
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sent []sentApply
			writer := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
				Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					sent = append(sent, sentApply{resourceVersion: sentVersion(t, obj, patch), dryRun: isDryRun(opts)})
					return tc.answer
				},
			})
			// The Applier's own client must not be used: everything goes through Live and Writer.
			operator := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
				Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					t.Error("the operator's client was read")
					return errors.New("unexpected read")
				},
				Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
					t.Error("the operator's client was written")
					return errors.New("unexpected write")
				},
			})
			a := &Applier{Client: operator, Reader: operator, FieldOwner: "test"}
			opts := Options{Writer: writer, DryRun: tc.dryRun,
				Live: func(_ context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
					if gvk.Kind != "ConfigMap" || key != (client.ObjectKey{Namespace: "ns", Name: "child"}) {
						t.Errorf("Live read %v %v", gvk, key)
					}
					switch {
					case tc.liveErr != nil:
						return nil, tc.liveErr
					case tc.live == nil:
						return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
					}
					return tc.live.DeepCopy(), nil
				}}

			obj := desired("v")
			got, err := a.ApplyWith(context.Background(), owner, obj, opts)
			var c *ConflictError
			switch {
			case tc.conflict != "":
				if !errors.As(err, &c) || !strings.Contains(c.Error(), tc.conflict) {
					t.Fatalf("ApplyWith: %v, want a conflict saying %q", err, tc.conflict)
				}
			case tc.wantErr != nil:
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("ApplyWith: %v, not the error wanted", err)
				}
			case err != nil:
				t.Fatalf("ApplyWith: %v", err)
			case got != tc.want:
				t.Errorf("ApplyWith = %s, want %s", got, tc.want)
			}
			if !slices.Equal(sent, tc.sent) {
				t.Errorf("the writer got %+v, want %+v", sent, tc.sent)
			}
			if len(a.records.owners) != 0 {
				t.Errorf("an object read through Live was remembered: %v", a.records.owners)
			}
		})
	}
}

// sentVersion is the resourceVersion an apply request carries.
func sentVersion(t *testing.T, obj client.Object, patch client.Patch) string {
	t.Helper()
	if patch.Type() != types.ApplyPatchType {
		t.Errorf("a %s patch was sent, not an apply", patch.Type())
	}
	data, err := patch.Data(obj)
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &sent); err != nil {
		t.Fatal(err)
	}
	return sent.Metadata.ResourceVersion
}

// isDryRun says whether opts make an apply a server-side dry run.
func isDryRun(opts []client.PatchOption) bool {
	o := &client.PatchOptions{}
	o.ApplyOptions(opts)
	return slices.Contains(o.DryRun, metav1.DryRunAll)
}
