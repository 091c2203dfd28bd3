package bundle

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/platform-operator/platform-operator/internal/catalyst"
)

// managerContainerName is the operator's container in the CSV's Deployment.
const managerContainerName = "manager"

// olmWebhookCertDir is where OLM (and config/default) mount the webhook server's certificate.
const olmWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"

// writtenEnv are the variables naming where the operator writes: Go's temporary directory, the home
// directory (Git and anything else that keeps files under ~) and Helm's three directories.
var writtenEnv = []string{"TMPDIR", "HOME", "HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"}

// flagValue is the value of the Go flag name in args (-name or --name, =value or a separate value),
// the last one winning as with package flag.
func flagValue(args []string, name string) (string, bool) {
	var value string
	var found bool
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-")
		if a == args[i] {
			continue
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			value, found = v, true
		} else if a == name && i+1 < len(args) {
			value, found = args[i+1], true
			i++
		}
	}
	return value, found
}

// managerPodProblems says what keeps the manager from running with a read-only root filesystem: the
// root filesystem must be read-only, and every path the operator writes (writtenEnv, and
// --catalyst-cache-dir or its default under TMPDIR) must lie on a writable emptyDir with a sizeLimit,
// so the operator neither fails on a read-only file system nor fills the node's disk. TMPDIR also moves
// --webhook-cert-dir's default, so the certificate directory must still be where OLM mounts it.
func managerPodProblems(spec corev1.PodSpec) []string {
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == managerContainerName })
	if i < 0 {
		return []string{"no container " + managerContainerName}
	}
	c := spec.Containers[i]
	var problems []string
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		problems = append(problems, "readOnlyRootFilesystem is not true")
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && slices.Contains(writtenEnv, e.Name) {
			problems = append(problems, fmt.Sprintf("%s comes from valueFrom, which this check cannot follow", e.Name))
			continue
		}
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	type written struct{ what, path string }
	var paths []written
	for _, name := range writtenEnv {
		if v, ok := env[name]; ok {
			paths = append(paths, written{name, v})
		} else {
			problems = append(problems, fmt.Sprintf("%s is not set: the operator would write to the image's default", name))
		}
	}
	args := append(slices.Clone(c.Command[min(1, len(c.Command)):]), c.Args...)
	tmp := cmp.Or(env["TMPDIR"], "/tmp")
	if dir, ok := flagValue(args, "catalyst-cache-dir"); ok {
		paths = append(paths, written{"--catalyst-cache-dir", dir})
	} else {
		paths = append(paths, written{"--catalyst-cache-dir's default", path.Join(tmp, catalyst.SourceCacheName)})
	}
	for _, w := range paths {
		if p := volumeProblem(spec, c, w.path); p != "" {
			problems = append(problems, fmt.Sprintf("%s %q %s", w.what, w.path, p))
		}
	}
	certDir, ok := flagValue(args, "webhook-cert-dir")
	if !ok {
		certDir = path.Join(tmp, "k8s-webhook-server", "serving-certs")
	}
	if certDir != olmWebhookCertDir {
		problems = append(problems, fmt.Sprintf("the webhook certificate is read from %q, not from %s where OLM mounts it", certDir, olmWebhookCertDir))
	}
	return problems
}

// volumeProblem says why p is not on a writable, bounded emptyDir of c; empty when it is. The mount
// that holds p is the one with the longest path containing it, as in the container.
func volumeProblem(spec corev1.PodSpec, c corev1.Container, p string) string {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return "is not an absolute, clean path"
	}
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		mp := path.Clean(m.MountPath)
		if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) && (mount == nil || len(mp) > len(path.Clean(mount.MountPath))) {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil {
		return "is on the root filesystem, not on a mounted volume"
	}
	if mount.ReadOnly {
		return fmt.Sprintf("is on the read-only mount %s", mount.MountPath)
	}
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
	if i < 0 {
		return fmt.Sprintf("is on mount %s of volume %s, which the pod does not have", mount.MountPath, mount.Name)
	}
	v := spec.Volumes[i]
	switch {
	case v.EmptyDir == nil:
		return fmt.Sprintf("is on volume %s, which is not an emptyDir", v.Name)
	case v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() <= 0:
		return fmt.Sprintf("is on emptyDir %s, which has no sizeLimit", v.Name)
	}
	return ""
}

func TestCSVManagerWritesOnlyToBoundedVolumes(t *testing.T) {
	spec := loadCSV(t).Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	for _, p := range managerPodProblems(spec) {
		t.Error(p)
	}
}

// goodManagerPod is a manager pod the check accepts: the shape config/manager gives it.
func goodManagerPod() corev1.PodSpec {
	const root = "/var/cache/platform-operator"
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:    managerContainerName,
			Command: []string{"/manager"},
			Args:    []string{"--leader-elect", "--webhook-cert-dir=" + olmWebhookCertDir},
			Env: []corev1.EnvVar{
				{Name: "TMPDIR", Value: root}, {Name: "HOME", Value: root + "/home"},
				{Name: "HELM_CACHE_HOME", Value: root + "/helm/cache"}, {Name: "HELM_CONFIG_HOME", Value: root + "/helm/config"},
				{Name: "HELM_DATA_HOME", Value: root + "/helm/data"},
			},
			SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "cache", MountPath: root},
				{Name: "webhook-cert", MountPath: olmWebhookCertDir, ReadOnly: true},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("2Gi"))}}},
			{Name: "webhook-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "cert"}}},
		},
	}
}

func TestManagerPodProblems(t *testing.T) {
	setEnv := func(name, value string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			c := &s.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
			if value != "" {
				c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
			}
		}
	}
	addArgs := func(args ...string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) { s.Containers[0].Args = append(s.Containers[0].Args, args...) }
	}
	tests := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   string // a problem containing this; none when empty
	}{
		// Positive controls.
		{name: "config/manager's shape", mutate: func(*corev1.PodSpec) {}},
		{name: "cache dir on the volume", mutate: addArgs("--catalyst-cache-dir=/var/cache/platform-operator/git")},
		{name: "cache dir on the volume, separate value", mutate: addArgs("-catalyst-cache-dir", "/var/cache/platform-operator/git")},
		{name: "cache dir is the volume", mutate: addArgs("--catalyst-cache-dir=/var/cache/platform-operator")},

		// The cache directory elsewhere.
		{name: "cache dir on the root filesystem", mutate: addArgs("--catalyst-cache-dir=/var/lib/catalyst"),
			want: `--catalyst-cache-dir "/var/lib/catalyst" is on the root filesystem`},
		{name: "cache dir on the root filesystem, separate value", mutate: addArgs("--catalyst-cache-dir", "/data"),
			want: `--catalyst-cache-dir "/data" is on the root filesystem`},
		{name: "the last cache dir wins", mutate: addArgs("--catalyst-cache-dir=/var/cache/platform-operator/git", "--catalyst-cache-dir=/data"),
			want: `--catalyst-cache-dir "/data"`},
		{name: "cache dir leaving the volume", mutate: addArgs("--catalyst-cache-dir=/var/cache/platform-operator/../../../etc"),
			want: "is not an absolute, clean path"},
		{name: "cache dir relative", mutate: addArgs("--catalyst-cache-dir=cache"), want: "is not an absolute, clean path"},
		{name: "cache dir beside the volume", mutate: addArgs("--catalyst-cache-dir=/var/cache/platform-operator-2"),
			want: "is on the root filesystem"},
		{name: "no TMPDIR: the default cache dir is /tmp's", mutate: setEnv("TMPDIR", ""),
			want: `--catalyst-cache-dir's default "/tmp/catalyst-source" is on the root filesystem`},
		{name: "no TMPDIR", mutate: setEnv("TMPDIR", ""), want: "TMPDIR is not set"},

		// Each written variable elsewhere.
		{name: "HOME unset", mutate: setEnv("HOME", ""), want: "HOME is not set"},
		{name: "HOME on the root filesystem", mutate: setEnv("HOME", "/home/nonroot"), want: `HOME "/home/nonroot" is on the root filesystem`},
		{name: "HELM_CACHE_HOME unset", mutate: setEnv("HELM_CACHE_HOME", ""), want: "HELM_CACHE_HOME is not set"},
		{name: "HELM_CONFIG_HOME on the root filesystem", mutate: setEnv("HELM_CONFIG_HOME", "/etc/helm"), want: "HELM_CONFIG_HOME"},
		{name: "HELM_DATA_HOME under the certificate", mutate: setEnv("HELM_DATA_HOME", olmWebhookCertDir+"/helm"),
			want: "is on the read-only mount " + olmWebhookCertDir},
		{name: "TMPDIR from valueFrom", mutate: func(s *corev1.PodSpec) {
			setEnv("TMPDIR", "")(s)
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "TMPDIR", ValueFrom: &corev1.EnvVarSource{}})
		}, want: "TMPDIR comes from valueFrom"},

		// The volume itself.
		{name: "read-only root filesystem off", mutate: func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
		}, want: "readOnlyRootFilesystem is not true"},
		{name: "no security context", mutate: func(s *corev1.PodSpec) { s.Containers[0].SecurityContext = nil },
			want: "readOnlyRootFilesystem is not true"},
		{name: "mount read-only", mutate: func(s *corev1.PodSpec) { s.Containers[0].VolumeMounts[0].ReadOnly = true },
			want: "is on the read-only mount /var/cache/platform-operator"},
		{name: "no sizeLimit", mutate: func(s *corev1.PodSpec) { s.Volumes[0].EmptyDir.SizeLimit = nil },
			want: "is on emptyDir cache, which has no sizeLimit"},
		{name: "sizeLimit zero", mutate: func(s *corev1.PodSpec) { s.Volumes[0].EmptyDir.SizeLimit = ptr.To(resource.MustParse("0")) },
			want: "which has no sizeLimit"},
		{name: "a hostPath", mutate: func(s *corev1.PodSpec) {
			s.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/cache"}}
		}, want: "is on volume cache, which is not an emptyDir"},
		{name: "volume missing", mutate: func(s *corev1.PodSpec) { s.Volumes = s.Volumes[1:] },
			want: "which the pod does not have"},
		{name: "mount missing", mutate: func(s *corev1.PodSpec) { s.Containers[0].VolumeMounts = s.Containers[0].VolumeMounts[1:] },
			want: `TMPDIR "/var/cache/platform-operator" is on the root filesystem`},
		{name: "a read-only mount over part of the volume", mutate: func(s *corev1.PodSpec) {
			s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts,
				corev1.VolumeMount{Name: "webhook-cert", MountPath: "/var/cache/platform-operator/helm", ReadOnly: true})
		}, want: `HELM_CACHE_HOME "/var/cache/platform-operator/helm/cache" is on the read-only mount /var/cache/platform-operator/helm`},
		{name: "no manager container", mutate: func(s *corev1.PodSpec) { s.Containers[0].Name = "operator" }, want: "no container manager"},

		// TMPDIR moves the webhook certificate's default directory.
		{name: "webhook cert dir left to follow TMPDIR", mutate: func(s *corev1.PodSpec) { s.Containers[0].Args = []string{"--leader-elect"} },
			want: `the webhook certificate is read from "/var/cache/platform-operator/k8s-webhook-server/serving-certs"`},
		{name: "webhook cert dir elsewhere", mutate: addArgs("--webhook-cert-dir=/certs"), want: `read from "/certs"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := goodManagerPod()
			tt.mutate(&spec)
			problems := managerPodProblems(spec)
			if tt.want == "" {
				if len(problems) > 0 {
					t.Fatalf("problems with an acceptable pod: %q", problems)
				}
				return
			}
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Fatalf("problems %q lack one with %q", problems, tt.want)
			}
		})
	}
}

func TestFlagValue(t *testing.T) {
	tests := []struct {
		args  []string
		value string
		found bool
	}{
		{[]string{"--catalyst-cache-dir=/a"}, "/a", true},
		{[]string{"-catalyst-cache-dir=/a"}, "/a", true},
		{[]string{"--catalyst-cache-dir", "/a"}, "/a", true},
		{[]string{"--catalyst-cache-dir=/a", "--catalyst-cache-dir=/b"}, "/b", true},
		{[]string{"--catalyst-cache-dir-extra=/a"}, "", false},
		{[]string{"catalyst-cache-dir=/a"}, "", false},
		{[]string{"--catalyst-cache-dir"}, "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		if v, ok := flagValue(tt.args, "catalyst-cache-dir"); v != tt.value || ok != tt.found {
			t.Errorf("flagValue(%q) = %q, %v; want %q, %v", tt.args, v, ok, tt.value, tt.found)
		}
	}
}
