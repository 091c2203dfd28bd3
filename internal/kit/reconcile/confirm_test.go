package reconcile

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestAccepted(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	allowed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"allow": "yes"}}
	closed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	reader := func(objs ...client.Object) client.Reader { return fake.NewClientBuilder().WithObjects(objs...).Build() }
	tests := []struct {
		name         string
		cached, live client.Reader
		want         bool
	}{
		{"the cache has it allowing", reader(allowed), reader(), true},
		{"the cache lags, the API server has it allowing", reader(), reader(allowed), true},
		{"the cache lags, no live reader", reader(), nil, false},
		{"neither allows", reader(closed), reader(closed), false},
		{"nowhere", reader(), reader(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sawNil bool
			got, err := Accepted(context.Background(), tt.cached, tt.live, key, func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
				func(c *corev1.ConfigMap) bool {
					sawNil = sawNil || c == nil
					return c != nil && c.Data["allow"] == "yes"
				})
			if err != nil || got != tt.want {
				t.Errorf("Accepted = %v, %v; want %v", got, err, tt.want)
			}
			if tt.name == "nowhere" && !sawNil {
				t.Error("accept was not asked about a missing object with nil")
			}
		})
	}
}
