package authentik

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
)

func newServer() *homelabv1.AuthentikServer {
	return &homelabv1.AuthentikServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "homelab", Name: "sso", UID: "uid-1"},
		Spec:       homelabv1.AuthentikServerSpec{Domain: "homelab", Database: "sso-db", Redis: "redis"},
	}
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		name     string
		have     map[string][]byte
		wantKeys []string
	}{
		{"an empty Secret gets every key", nil, SecretKeys},
		{"existing values are kept", map[string][]byte{SecretKeyKey: []byte("keep")}, []string{BootstrapPasswordKey, BootstrapTokenKey}},
		{"an empty value counts as missing", map[string][]byte{SecretKeyKey: {}, BootstrapPasswordKey: []byte("p"), BootstrapTokenKey: []byte("t")}, []string{SecretKeyKey}},
		{"a complete Secret gets nothing", map[string][]byte{SecretKeyKey: []byte("k"), BootstrapPasswordKey: []byte("p"), BootstrapTokenKey: []byte("t")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Generate(tt.have, bytes.NewReader(bytes.Repeat([]byte{7}, 1024)))
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, k := range SecretKeys {
				if v, ok := got[k]; ok {
					keys = append(keys, k)
					if len(v) < 32 {
						t.Errorf("%s is %d characters, want at least 32", k, len(v))
					}
				}
			}
			if diff := cmp.Diff(tt.wantKeys, keys); diff != "" {
				t.Errorf("generated keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGenerateFailsOnShortRandomness(t *testing.T) {
	if _, err := Generate(nil, bytes.NewReader([]byte{1, 2, 3})); err == nil {
		t.Fatal("Generate with 3 random bytes succeeded")
	}
}

func TestSecret(t *testing.T) {
	a := newServer()
	s := Secret(a, map[string][]byte{SecretKeyKey: []byte("x")})
	if s.Name != "sso-authentik" || s.Namespace != "homelab" || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret = %s/%s %s", s.Namespace, s.Name, s.Type)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != a.UID || !*s.OwnerReferences[0].Controller {
		t.Errorf("owner references = %v", s.OwnerReferences)
	}
}

func TestDeployments(t *testing.T) {
	a := newServer()
	in := Inputs{DatabaseSecret: "sso-db-postgres", RedisSecret: "redis-credentials"}
	tests := []struct {
		name      string
		image     string
		build     func(*homelabv1.AuthentikServer, Inputs) *corev1.PodTemplateSpec
		wantName  string
		wantArg   string
		wantImage string
		wantPort  bool
	}{
		{"server, default image", "", podOf(ServerDeployment), "sso-server", "server", DefaultImage, true},
		{"worker, default image", "", podOf(WorkerDeployment), "sso-worker", "worker", DefaultImage, false},
		{"server, operator image", "registry.local/authentik:1", podOf(ServerDeployment), "sso-server", "server", "registry.local/authentik:1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := in
			in.Image = tt.image
			pod := tt.build(a, in)
			if name := map[string]string{"server": ServerName(a), "worker": WorkerName(a)}[tt.wantArg]; name != tt.wantName {
				t.Errorf("Deployment name = %q, want %q", name, tt.wantName)
			}
			c := pod.Spec.Containers[0]
			if c.Image != tt.wantImage || !cmp.Equal(c.Args, []string{tt.wantArg}) {
				t.Errorf("container image %q args %v", c.Image, c.Args)
			}
			if got := len(c.Ports) == 1 && c.Ports[0].ContainerPort == HTTPPort; got != tt.wantPort {
				t.Errorf("HTTP port present = %v, want %v", got, tt.wantPort)
			}
			if pod.Labels[ComponentLabel] != tt.wantArg {
				t.Errorf("pod labels %v lack component %s", pod.Labels, tt.wantArg)
			}
			for _, e := range c.Env {
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					t.Errorf("env %s is not read from a Secret: %+v", e.Name, e)
				}
			}
		})
	}
	if s, w := ServerDeployment(a, in), WorkerDeployment(a, in); cmp.Equal(s.Spec.Selector, w.Spec.Selector) {
		t.Errorf("server and worker share the selector %v", s.Spec.Selector)
	}
}

func podOf(f func(*homelabv1.AuthentikServer, Inputs) *appsv1.Deployment) func(*homelabv1.AuthentikServer, Inputs) *corev1.PodTemplateSpec {
	return func(a *homelabv1.AuthentikServer, in Inputs) *corev1.PodTemplateSpec {
		return &f(a, in).Spec.Template
	}
}

func TestEnv(t *testing.T) {
	a := newServer()
	env := Env(a, Inputs{DatabaseSecret: "db", RedisSecret: "rd"})
	want := map[string]string{
		"AUTHENTIK_SECRET_KEY":           "sso-authentik/secret-key",
		"AUTHENTIK_BOOTSTRAP_PASSWORD":   "sso-authentik/bootstrap-password",
		"AUTHENTIK_BOOTSTRAP_TOKEN":      "sso-authentik/bootstrap-token",
		"AUTHENTIK_POSTGRESQL__HOST":     "db/host",
		"AUTHENTIK_POSTGRESQL__PORT":     "db/port",
		"AUTHENTIK_POSTGRESQL__USER":     "db/user",
		"AUTHENTIK_POSTGRESQL__PASSWORD": "db/password",
		"AUTHENTIK_POSTGRESQL__NAME":     "db/database",
		"AUTHENTIK_REDIS__HOST":          "rd/host",
		"AUTHENTIK_REDIS__PORT":          "rd/port",
		"AUTHENTIK_REDIS__USERNAME":      "rd/user?",
		"AUTHENTIK_REDIS__PASSWORD":      "rd/password?",
	}
	got := map[string]string{}
	for _, e := range env {
		ref := e.ValueFrom.SecretKeyRef
		v := ref.Name + "/" + ref.Key
		if ref.Optional != nil && *ref.Optional {
			v += "?"
		}
		got[e.Name] = v
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

func TestServiceAndVirtualService(t *testing.T) {
	a := newServer()
	svc := Service(a)
	if svc.Name != "sso" || svc.Spec.Ports[0].Port != ServicePort || svc.Spec.Selector[ComponentLabel] != ComponentServer {
		t.Errorf("Service = %s %+v %v", svc.Name, svc.Spec.Ports, svc.Spec.Selector)
	}
	tests := []struct {
		hostname, gateway, wantHost string
	}{
		{"home.example.com", "istio-system/homelab-main-12345678", "authentik.home.example.com"},
		{"example.org", "gw/other", "authentik.example.org"},
	}
	for _, tt := range tests {
		t.Run(tt.hostname, func(t *testing.T) {
			vs := VirtualService(a, tt.hostname, tt.gateway)
			want := istio.VirtualServiceSpec{
				Hosts:    []string{tt.wantHost},
				Gateways: []string{tt.gateway},
				HTTP: []istio.HTTPRoute{{Route: []istio.HTTPRouteDestination{{Destination: istio.Destination{
					Host: "sso.homelab.svc.cluster.local", Port: &istio.PortSelector{Number: 80}}}}}},
			}
			if diff := cmp.Diff(want, vs.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if vs.Namespace != "homelab" || !strings.HasPrefix(vs.APIVersion, "networking.istio.io/") || len(vs.OwnerReferences) != 1 {
				t.Errorf("metadata = %s %s %v", vs.Namespace, vs.APIVersion, vs.OwnerReferences)
			}
		})
	}
}
