package v1alpha1_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// c talks to a real kube-apiserver serving the generated CRD, so the OpenAPI and CEL rules in the type
// markers are checked the way users meet them: at admission. The server also serves cert-manager's and
// OpenShift's CRDs, so the fuzz test can dry-run every child the builders make.
var c client.Client

func TestMain(m *testing.M) {
	env, err := testenv.Start(testenv.Options{External: true})
	if err != nil {
		panic(err)
	}
	// The fuzz test sends a burst of requests per input; client-go's default 5 QPS would be its pace.
	env.Config.QPS, env.Config.Burst = 500, 1000
	if c, err = client.New(env.Config, client.Options{Scheme: scheme.Scheme}); err != nil {
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
	tests := []specCase[ircv1.ErgoNetworkSpec]{
		{name: "the reference sample", mutate: func(*ircv1.ErgoNetworkSpec) {}},
		{name: "plain listener only", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners = []ircv1.Listener{{Address: "0.0.0.0:6667"}}
			s.TLS, s.Route = nil, nil
		}},
		{name: "hostname without a dot", want: "spec.hostname: Invalid value", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Hostname = "localhost" }},
		{name: "hostname with upper case", want: "hostname must be a lowercase DNS name", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Hostname = "IRC.example.com" }},
		{name: "hostname with underscore", want: "hostname must be a lowercase DNS name", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Hostname = "irc_1.example.com" }},
		{name: "no listeners", want: "spec.listeners", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners = nil }},
		{name: "address without port", want: "address must be :port, 0.0.0.0:port or [::]:port", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "6667" }},
		{name: "port zero", want: "port must be a number between 1 and 65535", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = ":0" }},
		{name: "port too large", want: "port must be a number between 1 and 65535", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = ":70000" }},
		{name: "duplicate port", want: "listener ports must be unique", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "0.0.0.0:6697" }},
		{name: "duplicate port across address forms", want: "spec.listeners: Invalid value: \"array\": listener ports must be unique, compared as numbers", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners = append(s.Listeners, ircv1.Listener{Address: ":6667"})
		}},
		{name: "duplicate port behind a leading zero", want: "listener ports must be unique", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners = append(s.Listeners, ircv1.Listener{Address: ":06667"})
		}},
		{name: "leading zero", want: "spec.listeners[1].address: Invalid value: \"string\": port must be a number between 1 and 65535 without leading zeros", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners[1].Address = ":06667"
		}},
		{name: "port 65535", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "0.0.0.0:65535" }},
		// The pod runs as non-root with every capability dropped, so a port below 1024 would be admitted
		// and then fail to bind: it is refused at admission, naming the field and why.
		{name: "port 1", want: "spec.listeners[1].address: Invalid value: \"string\": ports below 1024 need the NET_BIND_SERVICE capability", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = ":1" }},
		{name: "port 443", want: "spec.listeners[0].address: Invalid value: \"string\": ports below 1024 need the NET_BIND_SERVICE capability", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[0].Address = ":443" }},
		{name: "port 194 on IPv6", want: "ports below 1024 need the NET_BIND_SERVICE capability", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "[::]:194" }},
		{name: "port 1023", want: "ports below 1024 need the NET_BIND_SERVICE capability", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "0.0.0.0:1023" }},
		{name: "port 1024", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = ":1024" }},
		{name: "port 6697", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners = []ircv1.Listener{{Address: ":6697", TLS: true}} }},
		{name: "port 65536", want: "port must be a number between 1 and 65535", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "[::]:65536" }},
		{name: "loopback IPv4", want: "spec.listeners[1].address: Invalid value: \"string\": address must be :port, 0.0.0.0:port or [::]:port", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners[1].Address = "127.0.0.1:6667"
		}},
		{name: "loopback IPv6", want: "spec.listeners[1].address: Invalid value: \"string\": address must be :port, 0.0.0.0:port or [::]:port", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners[1].Address = "[::1]:6667"
		}},
		{name: "host name listener", want: "must listen on all of its addresses for the Service to reach it", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Listeners[1].Address = "irc.example.com:6667"
		}},
		{name: "pod address listener", want: "spec.listeners[0].address", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[0].Address = "10.0.0.5:6697" }},
		{name: "unix socket listener", want: "spec.listeners[1].address", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = "/tmp/ergo.sock" }},
		{name: "route host among dnsNames", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.TLS.DNSNames = []string{"irc.example.org", "chat.example.com"}
			s.Route.Host = "chat.example.com"
		}},
		{name: "route host under a wildcard", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.TLS.DNSNames = []string{"*.example.com"}
			s.Route.Host = "chat.example.com"
		}},
		{name: "route host two labels under a wildcard", want: "spec.route.host: Invalid value: \"object\": spec.route.host must be covered by the certificate", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.TLS.DNSNames = []string{"*.example.com"}
			s.Route.Host = "a.b.example.com"
		}},
		{name: "route host is the wildcard's base", want: "spec.route.host must be covered by the certificate", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.TLS.DNSNames = []string{"*.example.com"}
			s.Route.Host = "example.com"
		}},
		{name: "route host not among dnsNames", want: "spec.route.host must be covered by the certificate", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.TLS.DNSNames = []string{"irc.example.com"}
			s.Route.Host = "chat.example.com"
		}},
		{name: "route host is not the hostname", want: "spec.route.host: Invalid value: \"object\": spec.route.host must be covered by the certificate", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Route.Host = "chat.example.com"
		}},
		{name: "route without a host", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Route.Host = "" }},
		{name: "issuer name too long", want: "spec.tls.issuerRef.name: Too long", mutate: func(s *ircv1.ErgoNetworkSpec) { s.TLS.IssuerRef.Name = strings.Repeat("a", 254) }},
		{name: "too many dnsNames", want: "spec.tls.dnsNames: Too many", mutate: func(s *ircv1.ErgoNetworkSpec) {
			for i := range 17 {
				s.TLS.DNSNames = append(s.TLS.DNSNames, "n"+itoa(i)+".example.com")
			}
		}},
		{name: "address too long", want: "spec.listeners[1].address: Too long", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Listeners[1].Address = strings.Repeat("0", 63) + ":1" }},
		{name: "route host too long", want: "spec.route.host: Too long", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Route.Host = strings.Repeat(strings.Repeat("a", 60)+".", 4) + "example.com"
		}},
		{name: "storage class too long", want: "spec.storage.storageClassName: Too long", mutate: func(s *ircv1.ErgoNetworkSpec) { s.Storage.StorageClassName = strings.Repeat("a", 254) }},
		{name: "extended resource and hugepages with equal limits", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{
				Requests: map[corev1.ResourceName]resource.Quantity{"example.com/gpu": resource.MustParse("1"), "hugepages-2Mi": resource.MustParse("4Mi"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   map[corev1.ResourceName]resource.Quantity{"example.com/gpu": resource.MustParse("1"), "hugepages-2Mi": resource.MustParse("4Mi")},
			}
		}},
		{name: "negative request", want: "spec.resources.requests: Invalid value: \"object\": resource quantities must not be negative", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{Requests: map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse("-1")}}
		}},
		{name: "negative limit", want: "spec.resources.limits: Invalid value: \"object\": resource quantities must not be negative", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{Limits: map[corev1.ResourceName]resource.Quantity{corev1.ResourceMemory: resource.MustParse("-1Mi")}}
		}},
		{name: "extended resource without a limit", want: "spec.resources: Invalid value: \"object\": hugepages and extended resources cannot be overcommitted", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{Requests: map[corev1.ResourceName]resource.Quantity{"example.com/gpu": resource.MustParse("1")}}
		}},
		{name: "hugepages request below limit", want: "hugepages and extended resources cannot be overcommitted", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{
				Requests: map[corev1.ResourceName]resource.Quantity{"hugepages-2Mi": resource.MustParse("2Mi"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   map[corev1.ResourceName]resource.Quantity{"hugepages-2Mi": resource.MustParse("4Mi")},
			}
		}},
		{name: "hugepages without cpu or memory", want: "spec.resources: Invalid value: \"object\": hugepages need a cpu or memory request or limit", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{Limits: map[corev1.ResourceName]resource.Quantity{"hugepages-2Mi": resource.MustParse("4Mi")}}
		}},
		{name: "hugepages of no size", want: "spec.resources.limits: Invalid value: \"object\": resource names are", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{Limits: map[corev1.ResourceName]resource.Quantity{"hugepages-big": resource.MustParse("4Mi")}}
		}},
		{name: "extended resource that is not a qualified name", want: "spec.resources.requests: Invalid value: \"object\": resource names are", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{Requests: map[corev1.ResourceName]resource.Quantity{"a/b/c": resource.MustParse("1")}}
		}},
		{name: "extended resource in kubernetes.io", want: "outside kubernetes.io", mutate: func(s *ircv1.ErgoNetworkSpec) {
			s.Resources = &ircv1.ResourceRequirements{Limits: map[corev1.ResourceName]resource.Quantity{"kubernetes.io/gpu": resource.MustParse("1")}}
		}},
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
	admitSpecs(t, tests, valid, func(i int, spec ircv1.ErgoNetworkSpec) client.Object {
		return &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "case-" + itoa(i)}, Spec: spec}
	})
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
	// A schema upgrade happens only when the user asks for it.
	if n.Spec.Storage.AutoUpgrade {
		t.Error("storage.autoUpgrade defaulted to true")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// specCase is a change to a valid spec and what the API server must answer to an object with it.
type specCase[S any] struct {
	name   string
	mutate func(*S)
	// want is empty for a spec the API server must accept, else a piece of the refusal message.
	want string
}

// admitSpecs creates, for each case, the object obj makes of valid() changed by the case, and checks the
// API server's answer (checkAdmission).
func admitSpecs[S any](t *testing.T, tests []specCase[S], valid func() S, obj func(i int, spec S) client.Object) {
	t.Helper()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := valid()
			tt.mutate(&spec)
			checkAdmission(t, c.Create(context.Background(), obj(i, spec)), tt.want)
		})
	}
}

// checkAdmission fails t unless the API server's answer err to a create is what the case wants: accepted
// when want is empty, else refused as Invalid with a message containing want.
func checkAdmission(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused a valid spec: %v", err)
	case want == "":
		return
	case err == nil:
		t.Fatalf("accepted an invalid spec; want an error containing %q", want)
	case !apierrors.IsInvalid(err):
		t.Fatalf("got %v, want an Invalid error", err)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err.Error(), want)
	}
}
