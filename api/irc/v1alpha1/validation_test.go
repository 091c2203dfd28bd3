package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// c talks to a real kube-apiserver serving the generated CRD, so the OpenAPI and CEL rules in the type
// markers are checked the way users meet them: at admission.
var c client.Client

func TestMain(m *testing.M) {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		panic(err)
	}
	s := runtime.NewScheme()
	if err := ircv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if c, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		panic(err)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		panic(err)
	}
	os.Exit(code)
}

func valid() ircv1.ErgoNetworkSpec {
	return ircv1.ErgoNetworkSpec{
		Hostname:        "irc.example.com",
		NetworkName:     "ExampleNet",
		OperCredentials: &ircv1.OperCredentials{SecretName: "oper"},
		Listeners:       []ircv1.Listener{{Address: ":6697", TLS: true}, {Address: "[::]:6667"}},
		TLS:             &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "le", Kind: "ClusterIssuer"}},
		Route:           &ircv1.RouteSpec{Host: "irc.example.com"},
	}
}

func TestAdmission(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*ircv1.ErgoNetworkSpec)
		// want is empty for a spec the API server must accept, else a piece of the refusal message.
		want string
	}{
		{name: "the reference sample", mutate: func(*ircv1.ErgoNetworkSpec) {}},
		{name: "plain listener only", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners = []ircv1.Listener{{Address: "0.0.0.0:6667"}}
			s.TLS, s.Route = nil, nil
		}},
		{name: "hostname without a dot", want: "spec.hostname: Invalid value", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Hostname = "localhost" }},
		{name: "hostname with upper case", want: "hostname must be a lowercase DNS name", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Hostname = "IRC.example.com" }},
		{name: "hostname with underscore", want: "hostname must be a lowercase DNS name", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Hostname = "irc_1.example.com" }},
		{name: "no listeners", want: "spec.listeners", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners = nil }},
		{name: "address without port", want: "address must be [host]:port", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "6667" }},
		{name: "port zero", want: "port must be between 1 and 65535", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = ":0" }},
		{name: "port too large", want: "port must be between 1 and 65535", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = ":70000" }},
		{name: "duplicate port", want: "listener ports must be unique", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "127.0.0.1:6697" }},
		{name: "tls listener without spec.tls", want: "spec.tls is required when a listener has tls: true", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.TLS, s.Route = nil, nil
		}},
		{name: "route without spec.tls", want: "spec.tls is required when spec.route is set", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.TLS = nil
			s.Listeners = []ircv1.Listener{{Address: ":6667"}}
		}},
		{name: "route without a tls listener", want: "spec.route needs a listener with tls: true", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners = []ircv1.Listener{{Address: ":6667"}}
		}},
		{name: "network name with a space", want: "spec.networkName", mutate: func(s *ircv1.ErgoNetworkSpec) { s.NetworkName = "My Network" }},
		{name: "too many listeners", want: "spec.listeners: Too many", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners = nil
			for p := 7000; p < 7017; p++ {
				s.Listeners = append(s.Listeners, ircv1.Listener{Address: ":" + itoa(p)})
			}
			s.TLS, s.Route = nil, nil
		}},
		{name: "issuer kind", want: "spec.tls.issuerRef.kind: Unsupported value", mutate: func(s *ircv1.ErgoNetworkSpec) { s.TLS.IssuerRef.Kind = "Vault" }},
		{name: "zero storage", want: "storage size must be positive", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Storage.Size = ptr.To(resource.MustParse("0")) }},
		{name: "requests above limits", want: "resource requests must not exceed limits", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{
				Requests: map[corev1.ResourceName]resource.Quantity{corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   map[corev1.ResourceName]resource.Quantity{corev1.ResourceMemory: resource.MustParse("256Mi")},
			}
		}},
		{name: "misspelt resource", want: "resource names are cpu, memory", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{Requests: map[corev1.ResourceName]resource.Quantity{"memroy": resource.MustParse("1Gi")}}
		}},
		{name: "oper secret name", want: "spec.operCredentials.secretName", mutate: func(s *ircv1.ErgoNetworkSpec) { s.OperCredentials.SecretName = "Not_A_Name" }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := valid()
			tt.mutate(&spec)
			n := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "case-" + itoa(i)}, Spec: spec}
			err := c.Create(context.Background(), n)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused a valid spec: %v", err)
			case tt.want == "":
				return
			case err == nil:
				t.Fatalf("accepted an invalid spec; want an error containing %q", tt.want)
			case !apierrors.IsInvalid(err):
				t.Fatalf("got %v, want an Invalid error", err)
			case !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q does not contain %q", err.Error(), tt.want)
			}
		})
	}
}

func TestNetworkNames(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"irc", true},
		{"my-network-2", true},
		{"2nd-network", false},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: tt.name}, Spec: valid()}
			err := c.Create(context.Background(), n)
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "it names the network's Service")) {
				t.Fatalf("got %v, want a refusal explaining the name rule", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	n := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "defaults"}, Spec: valid()}
	if err := c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if got := n.Spec.Storage.Size.String(); got != "1Gi" {
		t.Errorf("storage size defaulted to %q, want 1Gi", got)
	}
	if got := n.Spec.OperCredentials.Key; got != "password" {
		t.Errorf("oper key defaulted to %q, want password", got)
	}
	if got := n.Spec.TLS.IssuerRef.Kind; got != "ClusterIssuer" {
		t.Errorf("issuer kind changed to %q", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
