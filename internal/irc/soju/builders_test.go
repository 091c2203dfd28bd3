package soju

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/soju/sojutest"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// login is the role's login the golden files are rendered with.
var login = postgres.Settings{Host: "postgres.db.svc", Port: 5432, User: "irc_my_bouncer_0123456789", Password: "NOT-IN-CONFIG",
	Database: "irc_my_bouncer_0123456789", SSLMode: "require"}

func full() *ircv1.SojuBouncer {
	b := sojutest.FullBouncer("irc", "my-bouncer", "my-bouncer.irc.now", "pg-admin")
	b.UID = "8d2f1b4e-0000-4000-8000-000000000001"
	return b
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/irc/soju -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestRenderConfigGolden(t *testing.T) {
	for name, b := range map[string]*ircv1.SojuBouncer{
		"full.config":    full(),
		"minimal.config": sojutest.MinimalBouncer("irc", "tiny"),
		"metrics.config": withMetrics(sojutest.MinimalBouncer("irc", "tiny"), &ircv1.SojuMetrics{Enabled: true, Port: 9090}),
	} {
		t.Run(name, func(t *testing.T) {
			out, err := RenderConfig(b, login)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), login.Password) || strings.Contains(string(out), "password") {
				t.Errorf("the config carries the password:\n%s", out)
			}
			golden(t, name, out)
			// What soju reads back is the typed config.
			back, err := parse(string(out))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(back), len(Config(b, login)); got != want {
				t.Errorf("read back %d directives, want %d", got, want)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	b := full()
	b.Spec.Listeners = append(b.Spec.Listeners, ircv1.Listener{Address: "[::]:7000"}, ircv1.Listener{Address: "0.0.0.0:7001", TLS: true})
	ds := Config(b, login)
	var listens []string
	byName := map[string][]string{}
	for _, d := range ds {
		if d.Name == "listen" {
			listens = append(listens, d.Params[0])
		}
		byName[d.Name] = d.Params
	}
	want := []string{"ircs://:6697", "irc+insecure://:6667", "irc+insecure://[::]:7000", "ircs://0.0.0.0:7001"}
	if strings.Join(listens, " ") != strings.Join(want, " ") {
		t.Errorf("listen = %q, want %q", listens, want)
	}
	if got := byName["tls"]; len(got) != 2 || got[0] != "/etc/soju/tls/tls.crt" || got[1] != "/etc/soju/tls/tls.key" {
		t.Errorf("tls = %q", got)
	}
	if got := byName["db"]; len(got) != 2 || got[0] != "postgres" || got[1] != login.ConnInfo() {
		t.Errorf("db = %q", got)
	}
	if got := byName["message-store"]; len(got) != 1 || got[0] != "db" {
		t.Errorf("message-store = %q", got)
	}

	plain := sojutest.MinimalBouncer("irc", "tiny")
	for _, d := range Config(plain, login) {
		if d.Name == "tls" || d.Name == "title" {
			t.Errorf("a bouncer without tls or title has directive %s", d.Name)
		}
	}
	// A title the format cannot carry (the CRD refuses it first) is an error, not a different config.
	plain.Spec.Title = "a\nlisten irc+insecure://:1"
	if _, err := RenderConfig(plain, login); err == nil {
		t.Error("RenderConfig accepted a title with a line break")
	}
}

func TestDeployment(t *testing.T) {
	b := full()
	d := Deployment(b, Options{Image: "registry.example/soju:test"}, "digest-1")
	out, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "full.deployment.yaml", out)

	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || *d.Spec.Replicas != 1 {
		t.Errorf("strategy %s, replicas %d", d.Spec.Strategy.Type, *d.Spec.Replicas)
	}
	if d.Spec.Template.Annotations[ConfigDigestAnnotation] != "digest-1" {
		t.Errorf("template annotations %v", d.Spec.Template.Annotations)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if strings.Join(c.Command, " ") != "soju -config /etc/soju/config" || c.Image != "registry.example/soju:test" {
		t.Errorf("container %s %q", c.Image, c.Command)
	}
	if *pod.SecurityContext.RunAsNonRoot != true || *pod.SecurityContext.RunAsUser != sojuUID || *c.SecurityContext.ReadOnlyRootFilesystem != true ||
		*c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Errorf("security contexts %+v %+v", pod.SecurityContext, c.SecurityContext)
	}
	if len(c.Ports) != 2 || c.Ports[0].Name != "ircs-6697" || c.ReadinessProbe.TCPSocket.Port.StrVal != "irc-6667" {
		t.Errorf("ports %+v, probe %+v", c.Ports, c.ReadinessProbe)
	}
	checkPasswordEnv(t, c, b)

	if len(pod.InitContainers) != 1 {
		t.Fatalf("init containers %+v", pod.InitContainers)
	}
	ic := pod.InitContainers[0]
	checkPasswordEnv(t, ic, b)
	env := map[string]corev1.EnvVar{}
	for _, e := range ic.Env {
		env[e.Name] = e
	}
	if env[AdminUserEnv].Value != "admin" {
		t.Errorf("admin user env %+v", env[AdminUserEnv])
	}
	if ref := env[AdminPasswordEnv].ValueFrom.SecretKeyRef; ref.Name != "my-bouncer-admin" || ref.Key != "password" || env[AdminPasswordEnv].Value != "" {
		t.Errorf("admin password env %+v", env[AdminPasswordEnv])
	}
	if ic.Command[0] != "/bin/sh" || ic.Command[2] != AdminUserScript || !strings.Contains(AdminUserScript, "create-user \"$SOJU_ADMIN_USER\" -admin") ||
		!strings.Contains(AdminUserScript, "change-password") {
		t.Errorf("init command %q", ic.Command)
	}
	// The script never puts the password on a command line of another program.
	if strings.Contains(AdminUserScript, "sojudb -config /etc/soju/config create-user \"$SOJU_ADMIN_PASSWORD") {
		t.Error("the password is an argument")
	}

	if vs := pod.Volumes[0].Projected.Sources; len(vs) != 2 || vs[1].Secret.Name != "my-bouncer-tls" {
		t.Errorf("config volume %+v", pod.Volumes[0])
	}

	// No admin user: no init container; OpenShift: no pinned uid; default image.
	m := sojutest.MinimalBouncer("irc", "tiny")
	d = Deployment(m, Options{OpenShift: true}, "x")
	if len(d.Spec.Template.Spec.InitContainers) != 0 || d.Spec.Template.Spec.SecurityContext.RunAsUser != nil ||
		d.Spec.Template.Spec.Containers[0].Image != DefaultImage || len(d.Spec.Template.Spec.Volumes[0].Projected.Sources) != 1 {
		t.Errorf("minimal Deployment %+v", d.Spec.Template.Spec)
	}
}

func checkPasswordEnv(t *testing.T, c corev1.Container, b *ircv1.SojuBouncer) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == PasswordEnv {
			if e.Value != "" || e.ValueFrom.SecretKeyRef.Name != DatabaseSecretName(b) || e.ValueFrom.SecretKeyRef.Key != "password" {
				t.Errorf("%s: PGPASSWORD %+v", c.Name, e)
			}
			return
		}
	}
	t.Errorf("%s has no PGPASSWORD", c.Name)
}

func TestDigest(t *testing.T) {
	base := Digest([]byte("cfg"), "db", "admin", []byte("cert"))
	for name, d := range map[string]string{
		"config":         Digest([]byte("cfg2"), "db", "admin", []byte("cert")),
		"db password":    Digest([]byte("cfg"), "db2", "admin", []byte("cert")),
		"admin password": Digest([]byte("cfg"), "db", "admin2", []byte("cert")),
		"certificate":    Digest([]byte("cfg"), "db", "admin", []byte("cert2")),
		"moved bytes":    Digest([]byte("cfg"), "dba", "dmin", []byte("cert")),
	} {
		if d == base {
			t.Errorf("a change of the %s leaves the digest", name)
		}
	}
	if Digest([]byte("cfg"), "db", "admin", []byte("cert")) != base {
		t.Error("the digest is not stable")
	}
}

func TestChildren(t *testing.T) {
	b := full()
	if s := Service(b); s.Name != "my-bouncer" || len(s.Spec.Ports) != 2 || s.Labels["app.kubernetes.io/name"] != "soju" || s.OwnerReferences[0].Kind != "SojuBouncer" {
		t.Errorf("Service %+v", s.ObjectMeta)
	}
	if c := Certificate(b); c.Spec.SecretName != "my-bouncer-tls" || c.Spec.DNSNames[0] != "my-bouncer.irc.now" {
		t.Errorf("Certificate %+v", c.Spec)
	}
	if r := Route(b); r.Spec.Host != "my-bouncer.irc.now" || r.Spec.Port.TargetPort.StrVal != "ircs-6697" {
		t.Errorf("Route %+v", r.Spec)
	}
	m := sojutest.MinimalBouncer("irc", "tiny")
	if Certificate(m) != nil || Route(m) != nil {
		t.Error("a minimal bouncer has a Certificate or Route")
	}
	cm := ConfigMap(b, []byte("x"))
	if cm.Name != "my-bouncer-config" || cm.Data[ConfigKey] != "x" {
		t.Errorf("ConfigMap %+v", cm)
	}
	s := DatabaseSecret(b, login)
	if s.Name != "my-bouncer-db" || string(s.Data["password"]) != login.Password || string(s.Data["port"]) != "5432" ||
		!strings.HasPrefix(string(s.Data["url"]), "postgresql://irc_my_bouncer_0123456789:NOT-IN-CONFIG@postgres.db.svc:5432/") {
		t.Errorf("Secret %+v", s.Data)
	}
	if DatabaseName(b) != postgres.Name("irc", "my-bouncer") || DatabaseOwner(b).Comment() == "" || DatabaseOwner(b).Kind != "SojuBouncer" {
		t.Errorf("database %s, owner %+v", DatabaseName(b), DatabaseOwner(b))
	}
}
