package admit

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// configMaps is a Validator that records what it was called with and refuses a ConfigMap named "bad".
type configMaps struct{ calls []string }

func (c *configMaps) decide(op string, objs ...*corev1.ConfigMap) (admission.Warnings, error) {
	names := op
	for _, o := range objs {
		names += " " + o.Name
		if o.Name == "bad" {
			return nil, errors.New("refused " + o.Name)
		}
	}
	c.calls = append(c.calls, names)
	return admission.Warnings{names}, nil
}

func (c *configMaps) ValidateCreate(_ context.Context, o *corev1.ConfigMap) (admission.Warnings, error) {
	return c.decide("create", o)
}

func (c *configMaps) ValidateUpdate(_ context.Context, o, n *corev1.ConfigMap) (admission.Warnings, error) {
	return c.decide("update", o, n)
}

func (c *configMaps) ValidateDelete(_ context.Context, o *corev1.ConfigMap) (admission.Warnings, error) {
	return c.decide("delete", o)
}

func TestTyped(t *testing.T) {
	ctx := context.Background()
	cm := func(name string) runtime.Object { return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	tests := []struct {
		name      string
		call      func(admission.CustomValidator) (admission.Warnings, error)
		wantWarn  string
		wantErr   string
		wantCalls int
	}{
		{name: "create", call: func(v admission.CustomValidator) (admission.Warnings, error) { return v.ValidateCreate(ctx, cm("a")) },
			wantWarn: "create a", wantCalls: 1},
		{name: "update: old then new", call: func(v admission.CustomValidator) (admission.Warnings, error) {
			return v.ValidateUpdate(ctx, cm("a"), cm("b"))
		}, wantWarn: "update a b", wantCalls: 1},
		{name: "delete", call: func(v admission.CustomValidator) (admission.Warnings, error) { return v.ValidateDelete(ctx, cm("a")) },
			wantWarn: "delete a", wantCalls: 1},
		{name: "the validator's refusal", call: func(v admission.CustomValidator) (admission.Warnings, error) { return v.ValidateCreate(ctx, cm("bad")) },
			wantErr: "refused bad"},
		// Hostile: another kind never reaches the validator, on any operation and either side of an update.
		{name: "create of another kind", call: func(v admission.CustomValidator) (admission.Warnings, error) { return v.ValidateCreate(ctx, secret) },
			wantErr: "expected *v1.ConfigMap, got *v1.Secret"},
		{name: "update from another kind", call: func(v admission.CustomValidator) (admission.Warnings, error) {
			return v.ValidateUpdate(ctx, secret, cm("a"))
		}, wantErr: "got *v1.Secret"},
		{name: "update to another kind", call: func(v admission.CustomValidator) (admission.Warnings, error) {
			return v.ValidateUpdate(ctx, cm("a"), secret)
		}, wantErr: "got *v1.Secret"},
		{name: "delete of another kind", call: func(v admission.CustomValidator) (admission.Warnings, error) { return v.ValidateDelete(ctx, secret) },
			wantErr: "got *v1.Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &configMaps{}
			warnings, err := tt.call(Typed[*corev1.ConfigMap](c))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
			} else if err != nil || len(warnings) != 1 || warnings[0] != tt.wantWarn {
				t.Fatalf("= %v, %v; want warning %q", warnings, err, tt.wantWarn)
			}
			if len(c.calls) != tt.wantCalls {
				t.Errorf("validator called %v, want %d times", c.calls, tt.wantCalls)
			}
		})
	}
}
