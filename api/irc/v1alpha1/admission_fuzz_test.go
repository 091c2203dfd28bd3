package v1alpha1_test

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
)

// admissionInput is one fuzzed ErgoNetwork spec, in the order FuzzAdmission takes its arguments.
type admissionInput struct {
	hostname, networkName     string
	addr1, addr2              string
	tls1, tls2, withTLS       bool
	dnsName1, dnsName2        string
	withRoute                 bool
	routeHost                 string
	storageSize, storageClass string
	resource, request, limit  string
	withMemory                bool
	operSecret                string
}

// FuzzAdmission creates random networks against the envtest kube-apiserver and holds every spec it
// accepts to what the operator needs of it: the ergo config renders and is one ergo can start with, and
// every child the builders make is accepted by the API server (a server-side dry-run create). A spec
// admission lets through but a child or ergo then refuses is a network that stays broken while its
// user thinks it was accepted. The seeds run under go test; go test -fuzz=FuzzAdmission explores.
func FuzzAdmission(f *testing.F) {
	seeds := []admissionInput{
		// The reference network, everything set.
		{hostname: "irc.example.com", networkName: "ExampleNet", addr1: ":6697", tls1: true, addr2: "[::]:6667", withTLS: true,
			dnsName1: "*.example.com", withRoute: true, routeHost: "chat.example.com", storageSize: "2Gi", storageClass: "fast",
			resource: "memory", request: "64Mi", limit: "256Mi", operSecret: "oper"},
		// Two listeners on one port, once spelt with a leading zero: ergo cannot bind both.
		{hostname: "irc.example.com", addr1: ":6667", addr2: ":06667"},
		// Privileged ports, which the non-root pod without capabilities cannot bind.
		{hostname: "irc.example.com", addr1: ":443", tls1: true, withTLS: true, addr2: "[::]:194"},
		// Listeners the Service cannot reach.
		{hostname: "irc.example.com", addr1: "127.0.0.1:6667", addr2: "[::1]:6697"},
		{hostname: "irc.example.com", addr1: "irc.example.com:6667", addr2: "0.0.0.0:6697"},
		// A route host the certificate (the hostname, as dnsNames is empty) does not cover.
		{hostname: "irc.example.com", addr1: ":6697", tls1: true, withTLS: true, withRoute: true, routeHost: "other.example.com"},
		// Resources the Deployment would be refused with.
		{hostname: "irc.example.com", addr1: ":6667", resource: "cpu", request: "-1"},
		{hostname: "irc.example.com", addr1: ":6667", resource: "hugepages-2Mi", request: "2Mi", withMemory: true},
		{hostname: "irc.example.com", addr1: ":6667", resource: "a/b/c", limit: "1"},
	}
	for _, s := range seeds {
		f.Add(s.hostname, s.networkName, s.addr1, s.addr2, s.tls1, s.tls2, s.withTLS, s.dnsName1, s.dnsName2,
			s.withRoute, s.routeHost, s.storageSize, s.storageClass, s.resource, s.request, s.limit, s.withMemory, s.operSecret)
	}
	f.Fuzz(func(t *testing.T, hostname, networkName, addr1, addr2 string, tls1, tls2, withTLS bool, dnsName1, dnsName2 string,
		withRoute bool, routeHost, storageSize, storageClass, res, request, limit string, withMemory bool, operSecret string) {
		in := admissionInput{hostname, networkName, addr1, addr2, tls1, tls2, withTLS, dnsName1, dnsName2, withRoute,
			routeHost, storageSize, storageClass, res, request, limit, withMemory, operSecret}
		n := &ircv1.ErgoNetwork{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "fuzz-"},
			Spec:       fuzzSpec(in),
		}
		// A request that hangs fails the input instead of stalling the fuzzer without a word.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := c.Create(ctx, n)
		switch {
		case apierrors.IsInvalid(err):
			// A rule that fails to evaluate refuses every spec that reaches it: a broken rule, not a
			// refusal the user can act on.
			if msg := err.Error(); strings.Contains(msg, "evaluation") || strings.Contains(msg, "no such overload") {
				t.Fatalf("a CEL rule failed to evaluate: %v", err)
			}
			return
		case err != nil:
			t.Fatalf("create: %v", err)
		}
		checkAccepted(ctx, t, n)
		if err := c.Delete(ctx, n); err != nil {
			t.Fatalf("delete: %v", err)
		}
	})
}

// quantity parses s, or returns nil when it is not a quantity (the typed client cannot send one).
func quantity(s string) *resource.Quantity {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil
	}
	return &q
}

func fuzzSpec(in admissionInput) ircv1.ErgoNetworkSpec {
	s := ircv1.ErgoNetworkSpec{
		Hostname:    in.hostname,
		NetworkName: in.networkName,
		Listeners:   []ircv1.Listener{{Address: in.addr1, TLS: in.tls1}},
	}
	if in.addr2 != "" {
		s.Listeners = append(s.Listeners, ircv1.Listener{Address: in.addr2, TLS: in.tls2})
	}
	if in.operSecret != "" {
		s.OperCredentials = &ircv1.OperCredentials{SecretName: in.operSecret}
	}
	if in.withTLS {
		s.TLS = &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "issuer"}}
		for _, d := range []string{in.dnsName1, in.dnsName2} {
			if d != "" && !slices.Contains(s.TLS.DNSNames, d) {
				s.TLS.DNSNames = append(s.TLS.DNSNames, d)
			}
		}
	}
	if in.withRoute {
		s.Route = &ircv1.RouteSpec{Host: in.routeHost}
	}
	s.Storage.Size = quantity(in.storageSize)
	s.Storage.StorageClassName = in.storageClass
	if in.resource != "" {
		r := &ircv1.ResourceRequirements{}
		if q := quantity(in.request); q != nil {
			r.Requests = map[corev1.ResourceName]resource.Quantity{corev1.ResourceName(in.resource): *q}
		}
		if q := quantity(in.limit); q != nil {
			r.Limits = map[corev1.ResourceName]resource.Quantity{corev1.ResourceName(in.resource): *q}
		}
		if in.withMemory {
			if r.Requests == nil {
				r.Requests = map[corev1.ResourceName]resource.Quantity{}
			}
			r.Requests[corev1.ResourceMemory] = resource.MustParse("64Mi")
		}
		s.Resources = r
	}
	return s
}

// serverName is what ergo accepts as server.name: a host name with a dot (ergo's LoadConfig).
var serverName = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)+$`)

// checkAccepted holds a network the API server accepted (n as stored, defaults applied) to what the
// controller will make of it.
func checkAccepted(ctx context.Context, t *testing.T, n *ircv1.ErgoNetwork) {
	t.Helper()
	rendered, err := ergo.RenderConfig(ergo.BuildConfig(n, true))
	if err != nil {
		t.Fatalf("accepted spec %s does not render: %v", specJSON(n), err)
	}
	if !utf8.Valid(rendered) {
		t.Fatalf("rendered config is not UTF-8")
	}
	var doc struct {
		Network struct {
			Name string `json:"name"`
		} `json:"network"`
		Server struct {
			Name      string         `json:"name"`
			Listeners map[string]any `json:"listeners"`
		} `json:"server"`
	}
	if err := yaml.Unmarshal(rendered, &doc); err != nil {
		t.Fatalf("rendered config does not parse: %v\n%s", err, rendered)
	}
	if !serverName.MatchString(doc.Server.Name) {
		t.Errorf("ergo refuses server name %q", doc.Server.Name)
	}
	if doc.Network.Name == "" || strings.ContainsAny(doc.Network.Name, " \t\r\n") {
		t.Errorf("network name %q is not one IRC token", doc.Network.Name)
	}

	// Every listener ergo opens is on all addresses, on its own port, and is a port of the Service.
	servicePorts := map[int32]bool{}
	for _, p := range ergo.Service(n).Spec.Ports {
		servicePorts[p.Port] = true
	}
	listenerPorts := map[int32]string{}
	for addr := range doc.Server.Listeners {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("listener %q does not parse: %v", addr, err)
			continue
		}
		if host != "" && host != "0.0.0.0" && host != "::" {
			t.Errorf("listener %q listens on %q only, which the Service cannot reach", addr, host)
		}
		port, err := ergo.ListenerPort(addr)
		if err != nil {
			t.Errorf("listener %q: %v", addr, err)
			continue
		}
		// The container runs as non-root with every capability dropped: it cannot bind below 1024.
		if port < 1024 {
			t.Errorf("listener %q is on a privileged port the pod cannot bind", addr)
		}
		if other, dup := listenerPorts[port]; dup {
			t.Errorf("listeners %q and %q both bind port %d", other, addr, port)
		}
		listenerPorts[port] = addr
		if !servicePorts[port] {
			t.Errorf("listener %q has no Service port", addr)
		}
	}
	if len(listenerPorts) != len(servicePorts) || len(doc.Server.Listeners) != len(n.Spec.Listeners) {
		t.Errorf("%d listeners in the spec, %d in the config, %d distinct ports, %d Service ports",
			len(n.Spec.Listeners), len(doc.Server.Listeners), len(listenerPorts), len(servicePorts))
	}

	cert, route := ergo.Certificate(n), ergo.Route(n)
	if n.Spec.Route != nil && route == nil {
		t.Error("spec.route is set but no Route is built")
	}
	if cert != nil && route != nil && route.Spec.Host != "" && !covered(cert.Spec.DNSNames, route.Spec.Host) {
		t.Errorf("route host %q is not covered by the certificate's %v", route.Spec.Host, cert.Spec.DNSNames)
	}

	children := []client.Object{
		ergo.PVC(n),
		ergo.ConfigMap(n, rendered),
		ergo.Deployment(n, ergo.Options{}, ergo.ConfigDigest(rendered, nil, nil)),
		ergo.Service(n),
	}
	if cert != nil {
		children = append(children, cert)
	}
	if route != nil {
		children = append(children, route)
	}
	for _, child := range children {
		if err := c.Create(ctx, child, client.DryRunAll); err != nil {
			t.Errorf("the API server refuses the %T built from accepted spec %s: %v", child, specJSON(n), err)
		}
	}
}

// specJSON is the spec as a user would write it, for failure messages.
func specJSON(n *ircv1.ErgoNetwork) string {
	b, _ := json.Marshal(n.Spec)
	return string(b)
}

// covered tells whether a certificate for names serves host: an exact name, or a wildcard standing for
// exactly one label.
func covered(names []string, host string) bool {
	for _, name := range names {
		if name == host {
			return true
		}
		if base, ok := strings.CutPrefix(name, "*."); ok {
			if label, rest, found := strings.Cut(host, "."); found && label != "" && rest == base {
				return true
			}
		}
	}
	return false
}
