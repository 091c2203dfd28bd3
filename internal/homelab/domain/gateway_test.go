package domain

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/platform-operator/platform-operator/internal/kit/istio"
)

func TestGateway(t *testing.T) {
	d := newDomain("homelab", "main")
	tests := []struct {
		name     string
		selector map[string]string
	}{
		{"Istio's default ingress gateway", DefaultGatewaySelector()},
		{"a custom gateway", map[string]string{"app": "my-gateway"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Gateway(d, "istio-system", tt.selector)
			if g.Kind != "Gateway" || g.APIVersion != "networking.istio.io/v1" {
				t.Errorf("TypeMeta = %v", g.TypeMeta)
			}
			if g.Namespace != "istio-system" || g.Name != ChildName(d) || !BelongsTo(g.Labels, d) {
				t.Errorf("metadata = %s/%s %v", g.Namespace, g.Name, g.Labels)
			}
			want := istio.GatewaySpec{
				Selector: tt.selector,
				Servers: []istio.Server{
					{Port: istio.Port{Number: 443, Protocol: "HTTPS", Name: "https"},
						Hosts: []string{"home.example.com", "*.home.example.com"},
						TLS:   &istio.ServerTLS{Mode: "SIMPLE", CredentialName: TLSSecretName(d)}},
					{Port: istio.Port{Number: 80, Protocol: "HTTP", Name: "http"},
						Hosts: []string{"home.example.com", "*.home.example.com"},
						TLS:   &istio.ServerTLS{HTTPSRedirect: true}},
				},
			}
			if diff := cmp.Diff(want, g.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if got := GatewayRef(d, "istio-system"); got != "istio-system/"+ChildName(d) {
				t.Errorf("GatewayRef = %q", got)
			}
		})
	}
}
