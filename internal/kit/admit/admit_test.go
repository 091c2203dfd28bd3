package admit

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestWithRequestNamespace(t *testing.T) {
	inRequest := admission.NewContextWithRequest(context.Background(),
		admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Namespace: "team-a"}})
	tests := []struct {
		name      string
		ctx       context.Context
		namespace string
		want      string
	}{
		{name: "filled in from the request", ctx: inRequest, want: "team-a"},
		// The object's own namespace wins: a request's is only a fallback.
		{name: "the object's kept", ctx: inRequest, namespace: "team-b", want: "team-b"},
		{name: "no request, left empty", ctx: context.Background(), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: tt.namespace}}
			got := WithRequestNamespace(tt.ctx, in)
			if got.Namespace != tt.want || got.Name != "x" {
				t.Errorf("namespace %q, name %q; want %q, x", got.Namespace, got.Name, tt.want)
			}
			if in.Namespace != tt.namespace {
				t.Errorf("the caller's object changed to namespace %q", in.Namespace)
			}
		})
	}
}
