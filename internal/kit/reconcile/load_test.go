package reconcile

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestLoad(t *testing.T) {
	ctx := context.Background()
	c, _ := countingClient(t)
	n := newNetwork(t, c, newNamespace(t, c))
	live := client.ObjectKeyFromObject(n)
	gone := types.NamespacedName{Namespace: n.Namespace, Name: "gone"}
	forbidden := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: ircv1.GroupVersion.Group, Resource: "ergonetworks"}, "net", nil)
		},
	})

	tests := []struct {
		name       string
		reader     client.Reader
		key        types.NamespacedName
		wantFound  bool
		wantErr    bool
		wantForget bool
	}{
		// The positive control: an owner that exists is read, and its memos are kept.
		{name: "exists", reader: c, key: live, wantFound: true},
		{name: "gone", reader: c, key: gone, wantForget: true},
		// A failed read is not a deletion: forgetting here would cost the next reconcile a write.
		{name: "read fails", reader: forbidden, key: live, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var forgot, forgotAgain []types.NamespacedName
			obj := &ircv1.ErgoNetwork{}
			found, err := Load(ctx, tt.reader, tt.key, obj,
				func(k types.NamespacedName) { forgot = append(forgot, k) },
				func(k types.NamespacedName) { forgotAgain = append(forgotAgain, k) })
			if found != tt.wantFound || (err != nil) != tt.wantErr {
				t.Fatalf("Load = %v, %v; want found %v, error %v", found, err, tt.wantFound, tt.wantErr)
			}
			if found && obj.UID != n.UID {
				t.Errorf("read UID %q, want %q", obj.UID, n.UID)
			}
			for i, got := range [][]types.NamespacedName{forgot, forgotAgain} {
				if tt.wantForget && (len(got) != 1 || got[0] != tt.key) {
					t.Errorf("forget %d called with %v, want once with %v", i, got, tt.key)
				}
				if !tt.wantForget && len(got) != 0 {
					t.Errorf("forget %d called with %v, want not at all", i, got)
				}
			}
		})
	}
}
