package apply

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/platform-operator/platform-operator/internal/testutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// A child the cache lacks is sent create-only, with no read first; only a refused one is read and judged.
func TestApplyCreatesWithoutReading(t *testing.T) {
	owner := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "owner-uid"}}
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child"}, Data: map[string]string{"k": "v"}}
	}
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child"}, Data: map[string]string{"k": "theirs"}}

	for _, tc := range []struct {
		name     string
		taken    bool
		applies  int
		reads    int
		conflict bool
	}{
		{name: "free name: one create-only apply, no read", applies: 1},
		{name: "taken name: the API server refuses, the object is read once and left alone", taken: true, applies: 1, reads: 1, conflict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var versions []string
			cache := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
				Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
					data, err := patch.Data(obj)
					if err != nil {
						return err
					}
					var sent struct {
						Metadata struct {
							ResourceVersion string `json:"resourceVersion"`
						} `json:"metadata"`
					}
					if err := json.Unmarshal(data, &sent); err != nil {
						return err
					}
					versions = append(versions, sent.Metadata.ResourceVersion)
					if tc.taken && sent.Metadata.ResourceVersion == createOnlyVersion {
						return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "child", errors.New("the object has been modified"))
					}
					return nil
				},
			})
			api := fake.NewClientBuilder().WithScheme(scheme.Scheme)
			if tc.taken {
				api = api.WithObjects(theirs.DeepCopy())
			}
			reader := &testutil.CountingReader{Reader: api.Build()}
			a := &Applier{Client: cache, Reader: reader, FieldOwner: "test"}

			_, err := a.Apply(context.Background(), owner, desired())
			var c *ConflictError
			if tc.conflict != errors.As(err, &c) || (!tc.conflict && err != nil) {
				t.Fatalf("Apply: %v, want a conflict %v", err, tc.conflict)
			}
			if len(versions) != tc.applies || versions[0] != createOnlyVersion {
				t.Errorf("applies sent with resourceVersions %q, want %d, the first create-only", versions, tc.applies)
			}
			if reader.Gets != tc.reads {
				t.Errorf("%d reads from the API server, want %d", reader.Gets, tc.reads)
			}
		})
	}
}
