package ergo

import (
	"path"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestDeploymentGolden(t *testing.T) {
	// An explicit image keeps the golden file independent of DefaultImage, which make pin-images rewrites.
	out, err := yaml.Marshal(Deployment(referenceNetwork(), Options{Image: "ghcr.io/ergochat/ergo:v2.19.1"}, "0123abcd"))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "reference.deployment.golden.yaml", out)
}

func ergoContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("containers = %d, want 1", len(d.Spec.Template.Spec.Containers))
	}
	return d.Spec.Template.Spec.Containers[0]
}

func TestDeploymentShape(t *testing.T) {
	d := Deployment(referenceNetwork(), Options{}, "digest-1")
	spec := d.Spec
	if spec.Replicas == nil || *spec.Replicas != 1 {
		t.Errorf("replicas = %v, want 1", spec.Replicas)
	}
	if spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || spec.Strategy.RollingUpdate != nil {
		t.Errorf("strategy = %+v, want Recreate: two ergo processes must never share the datastore", spec.Strategy)
	}
	if !reflect.DeepEqual(spec.Selector.MatchLabels, SelectorLabels(referenceNetwork())) || len(spec.Selector.MatchExpressions) != 0 {
		t.Errorf("selector = %+v, want SelectorLabels", spec.Selector)
	}
	if !labels.SelectorFromSet(spec.Selector.MatchLabels).Matches(labels.Set(spec.Template.Labels)) {
		t.Errorf("selector %v does not select the pod template labels %v", spec.Selector.MatchLabels, spec.Template.Labels)
	}
	if !reflect.DeepEqual(spec.Template.Labels, Labels(referenceNetwork())) {
		t.Errorf("template labels = %v, want Labels", spec.Template.Labels)
	}
	if want := map[string]string{ConfigDigestAnnotation: "digest-1"}; !reflect.DeepEqual(spec.Template.Annotations, want) {
		t.Errorf("template annotations = %v, want only %v", spec.Template.Annotations, want)
	}
	pod := spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("service account token is mounted")
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("service links are enabled")
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g <= 0 || *g > 60 {
		t.Errorf("terminationGracePeriodSeconds = %v", g)
	}
	c := ergoContainer(t, d)
	if want := []string{"/ircd-bin/ergo", "run", "--conf", "/etc/ergo/ircd.yaml"}; !reflect.DeepEqual(c.Command, want) {
		t.Errorf("command = %q, want %q", c.Command, want)
	}
	if len(c.Args) != 0 {
		t.Errorf("args = %q, want none", c.Args)
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("imagePullPolicy = %s", c.ImagePullPolicy)
	}
	wantPorts := []corev1.ContainerPort{
		{Name: "ircs-6697", ContainerPort: 6697, Protocol: corev1.ProtocolTCP},
		{Name: "irc-6667", ContainerPort: 6667, Protocol: corev1.ProtocolTCP},
	}
	if !reflect.DeepEqual(c.Ports, wantPorts) {
		t.Errorf("ports = %+v, want %+v", c.Ports, wantPorts)
	}
}

// TestDeploymentDigestIsTheOnlyRollTrigger: two Deployments built from the same network differ only by
// the digest annotation.
func TestDeploymentDigestIsTheOnlyRollTrigger(t *testing.T) {
	a := Deployment(referenceNetwork(), Options{}, "a")
	b := Deployment(referenceNetwork(), Options{}, "b")
	if reflect.DeepEqual(a, b) {
		t.Fatal("a new digest does not change the Deployment")
	}
	b.Spec.Template.Annotations[ConfigDigestAnnotation] = "a"
	if !reflect.DeepEqual(a, b) {
		t.Error("Deployments for the same network differ beyond the digest")
	}
}

func TestDeploymentImage(t *testing.T) {
	tests := []struct {
		name  string
		image string
		want  string
	}{
		{name: "default", want: DefaultImage},
		{name: "override", image: "registry.example.com/ergo:v2.19.1", want: "registry.example.com/ergo:v2.19.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ergoContainer(t, Deployment(minimalNetwork(), Options{Image: tt.image}, "")).Image; got != tt.want {
				t.Errorf("image = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDeploymentOperEnv(t *testing.T) {
	withKey := referenceNetwork()
	withKey.Spec.OperCredentials.Key = "hash"
	tests := []struct {
		name    string
		network *ircv1.ErgoNetwork
		want    []corev1.EnvVar
	}{
		{name: "no oper", network: minimalNetwork()},
		{name: "default key", network: referenceNetwork(), want: []corev1.EnvVar{{
			Name: "ERGO__OPERS__ADMIN__PASSWORD",
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "my-network-oper"}, Key: "password",
			}},
		}}},
		{name: "custom key", network: withKey, want: []corev1.EnvVar{{
			Name: "ERGO__OPERS__ADMIN__PASSWORD",
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "my-network-oper"}, Key: "hash",
			}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ergoContainer(t, Deployment(tt.network, Options{}, "")).Env
			if !reflect.DeepEqual(env, tt.want) {
				t.Errorf("env = %+v, want %+v", env, tt.want)
			}
			for _, e := range env {
				if e.Value != "" {
					t.Errorf("env %s carries a literal value; the hash must come from the Secret", e.Name)
				}
			}
		})
	}
}

func TestDeploymentResources(t *testing.T) {
	c := ergoContainer(t, Deployment(referenceNetwork(), Options{}, ""))
	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	for _, list := range []struct {
		name      string
		got, want corev1.ResourceList
	}{{"requests", c.Resources.Requests, want.Requests}, {"limits", c.Resources.Limits, want.Limits}} {
		if len(list.got) != len(list.want) {
			t.Errorf("%s = %v, want %v", list.name, list.got, list.want)
		}
		for k, q := range list.want {
			if got := list.got[k]; got.Cmp(q) != 0 {
				t.Errorf("%s[%s] = %s, want %s", list.name, k, got.String(), q.String())
			}
		}
	}
	if r := ergoContainer(t, Deployment(minimalNetwork(), Options{}, "")).Resources; r.Requests != nil || r.Limits != nil {
		t.Errorf("resources without spec.resources = %+v, want none", r)
	}
}

// TestDeploymentMountsMatchConfig checks that every path the rendered config points ergo at exists in
// the container: config and certificate through the projected volume, datastore and lock file on the
// PVC.
func TestDeploymentMountsMatchConfig(t *testing.T) {
	tests := []struct {
		name    string
		network *ircv1.ErgoNetwork
		wantTLS bool
	}{
		{name: "plaintext only", network: minimalNetwork()},
		{name: "with tls", network: referenceNetwork(), wantTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Deployment(tt.network, Options{}, "")
			c := ergoContainer(t, d)
			files, dirs := containerPaths(t, d.Spec.Template.Spec, c)

			cfg := BuildConfig(tt.network, true)
			want := []string{c.Command[len(c.Command)-1]}
			for _, l := range cfg.Server.Listeners {
				if l.TLS != nil {
					want = append(want, l.TLS.Cert, l.TLS.Key)
				}
			}
			for _, f := range want {
				if !files[f] {
					t.Errorf("%s is not provided by any volume (files: %v)", f, files)
				}
			}
			for _, f := range []string{cfg.Datastore.Path, cfg.LockFile} {
				if !dirs[path.Dir(f)] {
					t.Errorf("%s is not on a writable volume (writable dirs: %v)", f, dirs)
				}
			}
			if dirs[path.Dir(cfg.Datastore.Path)] && pvcBacked(d.Spec.Template.Spec, c, path.Dir(cfg.Datastore.Path)) != PVCName(tt.network) {
				t.Errorf("datastore directory is not the network's PVC")
			}
			hasTLS := files[tlsCertPath]
			if hasTLS != tt.wantTLS {
				t.Errorf("certificate mounted = %v, want %v", hasTLS, tt.wantTLS)
			}
		})
	}
}

// containerPaths lists the files projected into the container and the directories it may write to.
func containerPaths(t *testing.T, pod corev1.PodSpec, c corev1.Container) (files, writable map[string]bool) {
	t.Helper()
	files, writable = map[string]bool{}, map[string]bool{}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Fatalf("mount %s has no volume", m.Name)
		}
		if m.SubPath != "" {
			t.Errorf("mount %s uses subPath, which never sees ConfigMap or Secret updates", m.Name)
		}
		switch {
		case v.Projected != nil:
			if !m.ReadOnly {
				t.Errorf("projected mount %s is writable", m.Name)
			}
			for _, src := range v.Projected.Sources {
				var items []corev1.KeyToPath
				if src.ConfigMap != nil {
					items = src.ConfigMap.Items
				}
				if src.Secret != nil {
					items = src.Secret.Items
				}
				for _, it := range items {
					files[path.Join(m.MountPath, it.Path)] = true
				}
			}
		case v.PersistentVolumeClaim != nil, v.EmptyDir != nil:
			if !m.ReadOnly {
				writable[m.MountPath] = true
			}
		}
	}
	// One mount inside another would make kubelet create a mount point inside a read-only volume.
	for _, a := range c.VolumeMounts {
		for _, b := range c.VolumeMounts {
			if a.Name != b.Name && strings.HasPrefix(b.MountPath, strings.TrimSuffix(a.MountPath, "/")+"/") {
				t.Errorf("mount %s (%s) is nested in %s (%s)", b.Name, b.MountPath, a.Name, a.MountPath)
			}
		}
	}
	return files, writable
}

func pvcBacked(pod corev1.PodSpec, c corev1.Container, dir string) string {
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil {
				return v.PersistentVolumeClaim.ClaimName
			}
		}
	}
	return ""
}

func TestDeploymentProbes(t *testing.T) {
	tlsOnly := referenceNetwork()
	tlsOnly.Spec.Listeners = []ircv1.Listener{{Address: ":6697", TLS: true}}
	tests := []struct {
		name     string
		network  *ircv1.ErgoNetwork
		wantPort string
	}{
		{name: "plaintext listener preferred", network: referenceNetwork(), wantPort: "irc-6667"},
		{name: "tls only", network: tlsOnly, wantPort: "ircs-6697"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ergoContainer(t, Deployment(tt.network, Options{}, ""))
			probes := map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe}
			for kind, p := range probes {
				if p == nil {
					t.Errorf("%s probe missing", kind)
					continue
				}
				// Only TCP connects: an exec probe needs a client in the image, an HTTP probe an API
				// listener and token ergo does not have.
				if p.TCPSocket == nil || p.Exec != nil || p.HTTPGet != nil || p.GRPC != nil {
					t.Errorf("%s probe = %+v, want a TCP socket probe", kind, p.ProbeHandler)
					continue
				}
				if p.TCPSocket.Port.StrVal != tt.wantPort {
					t.Errorf("%s probe port = %v, want %s", kind, p.TCPSocket.Port.String(), tt.wantPort)
				}
				if p.TCPSocket.Host != "" {
					t.Errorf("%s probe host = %q: it must come from the node, whose address ergo exempts", kind, p.TCPSocket.Host)
				}
			}
			if s := c.StartupProbe; s != nil && s.PeriodSeconds*s.FailureThreshold < 120 {
				t.Errorf("startup probe gives ergo %ds, want at least 120s for a datastore upgrade", s.PeriodSeconds*s.FailureThreshold)
			}
		})
	}
}

// TestDeploymentPodSecurity evaluates the pod template with the Pod Security Admission library itself:
// it must be admitted unchanged at "restricted" with and without the OpenShift switch.
func TestDeploymentPodSecurity(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		opts      Options
		wantFixed bool
	}{
		{name: "kubernetes", opts: Options{}, wantFixed: true},
		// OpenShift's restricted-v2 SCC assigns uid, gid and fsGroup from the namespace range and
		// rejects pods that set values outside it.
		{name: "openshift", opts: Options{OpenShift: true}, wantFixed: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Deployment(referenceNetwork(), tt.opts, "")
			results := evaluator.EvaluatePod(psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()},
				&d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec)
			for _, r := range results {
				if !r.Allowed {
					t.Errorf("restricted: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
				}
			}
			sc := d.Spec.Template.Spec.SecurityContext
			fixed := sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.FSGroup != nil
			if fixed != tt.wantFixed {
				t.Errorf("pinned uid/gid/fsGroup = %v, want %v (%+v)", fixed, tt.wantFixed, sc)
			}
			if tt.wantFixed && (*sc.RunAsUser == 0 || *sc.RunAsGroup == 0 || *sc.FSGroup == 0) {
				t.Errorf("pinned ids must not be root: %+v", sc)
			}
			c := ergoContainer(t, d)
			if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Error("root filesystem is writable")
			}
		})
	}
}

// TestLegacyDigestKey: while the running pod template has the digest under the legacy key, it stays
// there, so the operator upgrade that moved the annotation domain rolls no pod.
func TestLegacyDigestKey(t *testing.T) {
	tests := []struct {
		name         string
		opts         Options
		want, absent string
	}{
		{name: "new networks", opts: Options{}, want: ConfigDigestAnnotation, absent: LegacyConfigDigestAnnotation},
		{name: "a running legacy pod", opts: Options{LegacyDigestKey: true}, want: LegacyConfigDigestAnnotation, absent: ConfigDigestAnnotation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Deployment(referenceNetwork(), tt.opts, "d1").Spec.Template.Annotations
			if a[tt.want] != "d1" || a[tt.absent] != "" || len(a) != 1 {
				t.Errorf("pod template annotations %v, want only %s", a, tt.want)
			}
		})
	}
}
