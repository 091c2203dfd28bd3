package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func validBouncer() ircv1.SojuBouncerSpec {
	return ircv1.SojuBouncerSpec{
		Hostname:  "bouncer.example.com",
		Title:     "Example \"bouncer\" — for #chat",
		Listeners: []ircv1.Listener{{Address: ":6697", TLS: true}, {Address: "[::]:6667"}},
		TLS:       &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "le", Kind: "ClusterIssuer"}},
		Route:     &ircv1.RouteSpec{Host: "bouncer.example.com"},
		Database:  ircv1.SojuDatabaseSpec{AdminSecretName: "pg-admin"},
		AdminUser: &ircv1.SojuAdminUser{Name: "admin", PasswordSecret: ircv1.SecretKeyRef{Name: "soju-admin"}},
	}
}

// TestSojuBouncerAdmission checks the SojuBouncer's own rules and that the shared sub-types keep theirs.
func TestSojuBouncerAdmission(t *testing.T) {
	tests := []specCase[ircv1.SojuBouncerSpec]{
		{name: "the sample", mutate: func(*ircv1.SojuBouncerSpec) {}},
		{name: "minimal", mutate: func(s *ircv1.SojuBouncerSpec) {
			*s = ircv1.SojuBouncerSpec{Hostname: "b.example.com", Listeners: []ircv1.Listener{{Address: ":6667"}}}
		}},
		{name: "title with a newline", want: "title must not contain line breaks", mutate: func(s *ircv1.SojuBouncerSpec) { s.Title = "a\nb" }},
		{name: "title with a tab", want: "title must not contain line breaks", mutate: func(s *ircv1.SojuBouncerSpec) { s.Title = "a\tb" }},
		{name: "title with DEL", want: "title must not contain line breaks", mutate: func(s *ircv1.SojuBouncerSpec) { s.Title = "a\x7fb" }},
		{name: "title a lone brace", want: "title cannot be a lone '{'", mutate: func(s *ircv1.SojuBouncerSpec) { s.Title = "{" }},
		{name: "title with braces", mutate: func(s *ircv1.SojuBouncerSpec) { s.Title = "{ soju }" }},
		{name: "title too long", want: "spec.title: Too long", mutate: func(s *ircv1.SojuBouncerSpec) { s.Title = strings.Repeat("t", 256) }},
		{name: "hostname without a dot", want: "hostname must be a lowercase DNS name", mutate: func(s *ircv1.SojuBouncerSpec) { s.Hostname = "bouncer" }},
		{name: "tls listener without tls", want: "spec.tls is required when a listener has tls: true", mutate: func(s *ircv1.SojuBouncerSpec) {
			s.TLS, s.Route = nil, nil
		}},
		{name: "route without a tls listener", want: "spec.route needs a listener with tls: true", mutate: func(s *ircv1.SojuBouncerSpec) {
			s.Listeners = []ircv1.Listener{{Address: ":6667"}}
		}},
		{name: "route host not covered", want: "spec.route.host must be covered by the certificate", mutate: func(s *ircv1.SojuBouncerSpec) {
			s.Route.Host = "other.example.com"
		}},
		{name: "duplicate port", want: "listener ports must be unique", mutate: func(s *ircv1.SojuBouncerSpec) { s.Listeners[1].Address = "0.0.0.0:6697" }},
		{name: "loopback listener", want: "address must be :port, 0.0.0.0:port or [::]:port", mutate: func(s *ircv1.SojuBouncerSpec) {
			s.Listeners[1].Address = "127.0.0.1:6667"
		}},
		// soju runs as non-root with every capability dropped, as ergo does: a low port could not be bound.
		{name: "port 443", want: "spec.listeners[0].address: Invalid value: \"string\": ports below 1024 need the NET_BIND_SERVICE capability", mutate: func(s *ircv1.SojuBouncerSpec) {
			s.Listeners[0].Address = ":443"
		}},
		{name: "port 194 plain", want: "spec.listeners[1].address: Invalid value: \"string\": ports below 1024", mutate: func(s *ircv1.SojuBouncerSpec) { s.Listeners[1].Address = "[::]:194" }},
		{name: "port 6697", mutate: func(s *ircv1.SojuBouncerSpec) { s.Listeners[0].Address = ":6697" }},
		{name: "port 1024", mutate: func(s *ircv1.SojuBouncerSpec) { s.Listeners[1].Address = ":1024" }},
		{name: "no listeners", want: "spec.listeners", mutate: func(s *ircv1.SojuBouncerSpec) { s.Listeners = nil }},
		{name: "admin secret name", want: "spec.database.adminSecretName", mutate: func(s *ircv1.SojuBouncerSpec) { s.Database.AdminSecretName = "Not_A_Name" }},
		{name: "reclaim policy", want: "spec.database.reclaimPolicy: Unsupported value", mutate: func(s *ircv1.SojuBouncerSpec) { s.Database.ReclaimPolicy = "Keep" }},
		{name: "retain", mutate: func(s *ircv1.SojuBouncerSpec) { s.Database.ReclaimPolicy = ircv1.ReclaimRetain }},
		{name: "admin user with a space", want: "spec.adminUser.name", mutate: func(s *ircv1.SojuBouncerSpec) { s.AdminUser.Name = "the admin" }},
		{name: "admin user starting with a dash", want: "spec.adminUser.name", mutate: func(s *ircv1.SojuBouncerSpec) { s.AdminUser.Name = "-admin" }},
		{name: "admin user too long", want: "spec.adminUser.name: Too long", mutate: func(s *ircv1.SojuBouncerSpec) { s.AdminUser.Name = strings.Repeat("a", 65) }},
		{name: "admin user empty", want: "spec.adminUser.name", mutate: func(s *ircv1.SojuBouncerSpec) { s.AdminUser.Name = "" }},
		{name: "password secret name", want: "spec.adminUser.passwordSecret.name", mutate: func(s *ircv1.SojuBouncerSpec) { s.AdminUser.PasswordSecret.Name = "A" }},
		{name: "password secret key", want: "spec.adminUser.passwordSecret.key", mutate: func(s *ircv1.SojuBouncerSpec) { s.AdminUser.PasswordSecret.Key = "a/b" }},
		{name: "metrics on the default port", mutate: func(s *ircv1.SojuBouncerSpec) { s.Metrics = &ircv1.SojuMetrics{Enabled: true} }},
		{name: "metrics on a listener's port", want: "spec.metrics.port must differ from every listener's port", mutate: func(s *ircv1.SojuBouncerSpec) {
			s.Metrics = &ircv1.SojuMetrics{Enabled: true, Port: 6697}
		}},
		{name: "metrics defaulted onto a listener's port", want: "spec.metrics.port must differ", mutate: func(s *ircv1.SojuBouncerSpec) {
			s.Listeners[1].Address = "[::]:9090"
			s.Metrics = &ircv1.SojuMetrics{Enabled: true}
		}},
		{name: "disabled metrics on a listener's port", mutate: func(s *ircv1.SojuBouncerSpec) { s.Metrics = &ircv1.SojuMetrics{Port: 6697} }},
		{name: "metrics below 1024", want: "spec.metrics.port: Invalid value", mutate: func(s *ircv1.SojuBouncerSpec) { s.Metrics = &ircv1.SojuMetrics{Enabled: true, Port: 80} }},
		{name: "metrics above 65535", want: "spec.metrics.port: Invalid value", mutate: func(s *ircv1.SojuBouncerSpec) { s.Metrics = &ircv1.SojuMetrics{Enabled: true, Port: 65536} }},
	}
	admitSpecs(t, tests, validBouncer, func(i int, spec ircv1.SojuBouncerSpec) client.Object {
		return &ircv1.SojuBouncer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "soju-" + itoa(i)}, Spec: spec}
	})
}

func TestSojuBouncerNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"soju": true, "my-bouncer-2": true, "2nd": false, strings.Repeat("a", 60): true, strings.Repeat("a", 61): false,
	} {
		t.Run(name, func(t *testing.T) {
			b := &ircv1.SojuBouncer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: validBouncer()}
			err := c.Create(context.Background(), b)
			if ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !ok && (err == nil || !strings.Contains(err.Error(), "it names the bouncer's Service")) {
				t.Fatalf("got %v, want a refusal explaining the name rule", err)
			}
		})
	}
}

func TestSojuBouncerDefaults(t *testing.T) {
	spec := validBouncer()
	spec.Database = ircv1.SojuDatabaseSpec{}
	spec.Metrics = &ircv1.SojuMetrics{Enabled: true}
	b := &ircv1.SojuBouncer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "soju-defaults"}, Spec: spec}
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got := b.Spec.Database.ReclaimPolicy; got != ircv1.ReclaimDelete {
		t.Errorf("reclaimPolicy defaulted to %q, want Delete", got)
	}
	if got := b.Spec.AdminUser.PasswordSecret.Key; got != "password" {
		t.Errorf("password key defaulted to %q, want password", got)
	}
	if got := b.Spec.Metrics.Port; got != 9090 {
		t.Errorf("metrics port defaulted to %d, want 9090", got)
	}
}
