package catalyst

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

const fullSHA = "0123456789abcdef0123456789abcdef01234567"

func TestBuildJobName(t *testing.T) {
	env := func(ns, name string) *catalystv1.Environment {
		return catalysttest.Environment(ns, name, "team", "web")
	}
	long := strings.Repeat("a", 62) + "b"
	tests := []struct {
		name       string
		env        *catalystv1.Environment
		commit     string
		retry      string
		wantPrefix string
	}{
		{"short name", env("team-web", "pr-123"), fullSHA, "", "pr-123-0123456-"},
		{"abbreviated commit", env("team-web", "pr-123"), "a1b2c3d", "", "pr-123-a1b2c3d-"},
		{"63-character name is cut", env("team-web", long), fullSHA, "", strings.Repeat("a", 49) + "-0123456-"},
		{"a cut ending in '-' loses it", env("team-web", strings.Repeat("a", 48)+"-"+strings.Repeat("b", 14)), fullSHA, "", strings.Repeat("a", 48) + "-0123456-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildJobName(tt.env, tt.commit, tt.retry)
			if !strings.HasPrefix(got, tt.wantPrefix) || len(got) != len(tt.wantPrefix)+5 {
				t.Fatalf("BuildJobName = %q, want %q and 5 hash characters", got, tt.wantPrefix)
			}
			if len(got) > 63 {
				t.Fatalf("BuildJobName = %q: %d characters", got, len(got))
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Fatalf("BuildJobName = %q is not a DNS label: %v", got, errs)
			}
			if again := BuildJobName(tt.env, tt.commit, tt.retry); again != got {
				t.Fatalf("BuildJobName is not stable: %q then %q", got, again)
			}
		})
	}

	base := BuildJobName(env("team-web", "pr-1"), fullSHA, "")
	for what, other := range map[string]string{
		"another namespace": BuildJobName(env("other", "pr-1"), fullSHA, ""),
		"a retry":           BuildJobName(env("team-web", "pr-1"), fullSHA, "1"),
		"another commit":    BuildJobName(env("team-web", "pr-1"), "f"+fullSHA[1:], ""),
	} {
		if other == base {
			t.Errorf("%s gives the same Job name %q", what, base)
		}
	}
}

func buildFixture() (*catalystv1.Environment, *catalystv1.Project) {
	env := catalysttest.Environment("team-web", "pr-123", "team", "web")
	env.UID = types.UID("uid-1")
	env.Spec.Source.CommitSHA = fullSHA
	p := catalysttest.Project("team", "web")
	p.Spec.Build = &catalystv1.ProjectBuild{Registry: "registry.example.com:5000", Dockerfile: "docker/app.Dockerfile",
		Context: ".", RegistrySecretRef: &catalystv1.LocalObjectReference{Name: "push"}}
	p.Spec.Source.SecretRef = &catalystv1.LocalObjectReference{Name: "git"}
	return env, p
}

func TestBuildJob(t *testing.T) {
	image := "registry.example.com:5000/team/web:" + fullSHA
	tests := []struct {
		name     string
		mutate   func(*catalystv1.Environment, *catalystv1.Project, *BuildConfig)
		wantArgs []string
		noArgs   []string
		check    func(*testing.T, *batchv1.Job)
	}{
		{
			name: "the reference's project",
			wantArgs: []string{
				"--context=git://github.com/org/repo#refs/heads/feature/login#" + fullSHA,
				"--dockerfile=/kaniko/buildcontext/docker/app.Dockerfile",
				"--destination=" + image,
				"--label=org.opencontainers.image.revision=" + fullSHA,
			},
			noArgs: []string{"--context-sub-path", "--insecure-registry"},
		},
		{
			name: "a sub-directory context, the Project's branch, the default Dockerfile",
			mutate: func(e *catalystv1.Environment, p *catalystv1.Project, _ *BuildConfig) {
				e.Spec.Source.Branch = ""
				p.Spec.Build.Context = "./services/api/"
				p.Spec.Build.Dockerfile = ""
			},
			wantArgs: []string{
				"--context=git://github.com/org/repo#refs/heads/main#" + fullSHA,
				"--context-sub-path=services/api",
				"--dockerfile=/kaniko/buildcontext/Dockerfile",
			},
		},
		{
			name: "an insecure registry",
			mutate: func(_ *catalystv1.Environment, _ *catalystv1.Project, c *BuildConfig) {
				c.InsecureRegistries = []string{"registry.example.com"}
			},
			wantArgs: []string{"--insecure-registry=registry.example.com:5000"},
		},
		{
			name: "no Secrets: no mount and no git credentials",
			mutate: func(_ *catalystv1.Environment, p *catalystv1.Project, _ *BuildConfig) {
				p.Spec.Build.RegistrySecretRef = nil
				p.Spec.Source.SecretRef = nil
			},
			check: func(t *testing.T, j *batchv1.Job) {
				c := j.Spec.Template.Spec.Containers[0]
				if len(c.VolumeMounts) != 0 || len(j.Spec.Template.Spec.Volumes) != 0 {
					t.Errorf("volumes without a registry Secret: %+v", j.Spec.Template.Spec.Volumes)
				}
				if len(c.Env) != 1 || c.Env[0].Name != "GIT_PULL_METHOD" {
					t.Errorf("env without a git Secret: %+v", c.Env)
				}
			},
		},
		{
			name: "a Git CA bundle: one more file in Kaniko's certificate directory, the image's own kept",
			mutate: func(_ *catalystv1.Environment, _ *catalystv1.Project, c *BuildConfig) {
				c.GitCABundle = []byte("-----BEGIN CERTIFICATE-----\n")
			},
			check: func(t *testing.T, j *batchv1.Job) {
				pod := j.Spec.Template.Spec
				i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil })
				if i < 0 || pod.Volumes[i].ConfigMap.Name != GitCAConfigMapName ||
					!slices.Equal(pod.Volumes[i].ConfigMap.Items, []corev1.KeyToPath{{Key: GitCAKey, Path: GitCAFile}}) {
					t.Fatalf("volumes = %+v, want ConfigMap %s's %s as %s", pod.Volumes, GitCAConfigMapName, GitCAKey, GitCAFile)
				}
				c := pod.Containers[0]
				m := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == pod.Volumes[i].Name })
				if m < 0 || c.VolumeMounts[m].MountPath != "/kaniko/ssl/certs/catalyst-git-ca.crt" || c.VolumeMounts[m].SubPath != GitCAFile ||
					!c.VolumeMounts[m].ReadOnly {
					t.Fatalf("mounts = %+v, want the bundle read-only as one file (subPath) beside ca-certificates.crt", c.VolumeMounts)
				}
				if !slices.Contains(c.Env, corev1.EnvVar{Name: "SSL_CERT_DIR", Value: "/kaniko/ssl/certs"}) {
					t.Fatalf("env = %+v, want SSL_CERT_DIR", c.Env)
				}
			},
		},
		{
			name: "no Git CA bundle: no ConfigMap mount, the image's certificates alone",
			check: func(t *testing.T, j *batchv1.Job) {
				for _, v := range j.Spec.Template.Spec.Volumes {
					if v.ConfigMap != nil {
						t.Fatalf("a ConfigMap volume without a bundle: %+v", v)
					}
				}
				for _, e := range j.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "SSL_CERT_DIR" {
						t.Fatalf("SSL_CERT_DIR without a bundle")
					}
				}
			},
		},
		{
			name:   "an Environment in its Project's namespace is the Job's owner",
			mutate: func(e *catalystv1.Environment, _ *catalystv1.Project, _ *BuildConfig) { e.Namespace = "team" },
			check: func(t *testing.T, j *batchv1.Job) {
				if len(j.OwnerReferences) != 1 || j.OwnerReferences[0].UID != "uid-1" || !*j.OwnerReferences[0].Controller {
					t.Errorf("owner references = %+v", j.OwnerReferences)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, p := buildFixture()
			cfg := BuildConfig{BuilderImage: DefaultBuilderImage}
			if tt.mutate != nil {
				tt.mutate(env, p, &cfg)
			}
			job := BuildJob(BuildInput{Env: env, Project: p, Name: "pr-123-0123456-abcde", Commit: fullSHA, Image: image, Config: cfg})
			args := job.Spec.Template.Spec.Containers[0].Args
			for _, want := range tt.wantArgs {
				if !slices.Contains(args, want) {
					t.Errorf("args %q lack %q", args, want)
				}
			}
			for _, no := range tt.noArgs {
				for _, a := range args {
					if strings.HasPrefix(a, no) {
						t.Errorf("args hold %q", a)
					}
				}
			}
			if tt.check != nil {
				tt.check(t, job)
			}
		})
	}
}

func TestBuildJobSafety(t *testing.T) {
	env, p := buildFixture()
	job := BuildJob(BuildInput{Env: env, Project: p, Name: "pr-123-0123456-abcde", Commit: fullSHA,
		Image: "registry.example.com:5000/team/web:" + fullSHA, Config: BuildConfig{BuilderImage: "kaniko:test"}})

	if job.Namespace != "team" || len(job.OwnerReferences) != 0 {
		t.Errorf("the Job runs in the Project's namespace, unowned across namespaces: %s, %+v", job.Namespace, job.OwnerReferences)
	}
	if !labels.IsManaged(job.Labels) || job.Labels[BuildOwnerUIDLabel] != "uid-1" || job.Annotations[OwnerAnnotation] != "team-web/pr-123" {
		t.Errorf("ownership labels %v annotations %v", job.Labels, job.Annotations)
	}
	if job.Labels[catalystv1.LabelEnvironment] != "pr-123" || job.Spec.Template.Labels[BuildOwnerUIDLabel] != "uid-1" {
		t.Errorf("pod labels %v", job.Spec.Template.Labels)
	}
	s := job.Spec
	if *s.BackoffLimit != BuildBackoffLimit || *s.ActiveDeadlineSeconds != DefaultBuildTimeoutSeconds || *s.TTLSecondsAfterFinished != BuildTTLSeconds {
		t.Errorf("bounds: backoff %d deadline %d ttl %d", *s.BackoffLimit, *s.ActiveDeadlineSeconds, *s.TTLSecondsAfterFinished)
	}
	p.Spec.Build.TimeoutSeconds = 600
	if j := BuildJob(BuildInput{Env: env, Project: p, Name: "n", Commit: fullSHA, Config: BuildConfig{}}); *j.Spec.ActiveDeadlineSeconds != 600 {
		t.Errorf("spec.build.timeoutSeconds not honoured: %d", *j.Spec.ActiveDeadlineSeconds)
	}

	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || *pod.AutomountServiceAccountToken || *pod.EnableServiceLinks {
		t.Errorf("pod: restart %s, token %v, service links %v", pod.RestartPolicy, *pod.AutomountServiceAccountToken, *pod.EnableServiceLinks)
	}
	if pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccomp %+v", pod.SecurityContext.SeccompProfile)
	}
	c := pod.Containers[0]
	if c.Image != "kaniko:test" || c.Name != BuildContainer {
		t.Errorf("container %s image %s", c.Name, c.Image)
	}
	sc := c.SecurityContext
	if *sc.Privileged || *sc.AllowPrivilegeEscalation || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || slices.Contains(sc.Capabilities.Add, "SYS_ADMIN") ||
		slices.Contains(sc.Capabilities.Add, "NET_RAW") {
		t.Errorf("container security context %+v", sc)
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}

	// Credentials: the registry's are a mounted file, the repository's come from the Secret by
	// reference; no value of either is in the Job.
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != "push" ||
		pod.Volumes[0].Secret.Items[0].Key != corev1.DockerConfigJsonKey || pod.Volumes[0].Secret.Items[0].Path != "config.json" {
		t.Errorf("registry Secret volume %+v", pod.Volumes)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != DockerConfigDir || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	for _, e := range c.Env {
		if e.Name == "GIT_PULL_METHOD" {
			continue
		}
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "git" || !*e.ValueFrom.SecretKeyRef.Optional {
			t.Errorf("env %s must come from Secret git, optionally: %+v", e.Name, e)
		}
	}
	for _, a := range c.Args {
		if strings.Contains(strings.ToLower(a), "password") || strings.Contains(strings.ToLower(a), "token") {
			t.Errorf("an argument names a credential: %q", a)
		}
	}
}

func TestAttemptOf(t *testing.T) {
	env, p := buildFixture()
	job := BuildJob(BuildInput{Env: env, Project: p, Name: "n", Commit: fullSHA, Attempt: 3})
	if got := AttemptOf(job); got != 3 {
		t.Errorf("AttemptOf = %d, want 3", got)
	}
	for _, v := range []string{"", "0", "-2", "x"} {
		job.Annotations[BuildAttemptAnnotation] = v
		if got := AttemptOf(job); got != 1 {
			t.Errorf("AttemptOf(%q) = %d, want 1", v, got)
		}
	}
}

func TestStateOf(t *testing.T) {
	cond := func(typ batchv1.JobConditionType, status corev1.ConditionStatus, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: status, Reason: reason, Message: "m"}
	}
	tests := []struct {
		name       string
		conds      []batchv1.JobCondition
		want       JobState
		wantReason string
	}{
		{"new", nil, JobRunning, ""},
		{"success criteria met, not yet complete", []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, "")}, JobRunning, ""},
		{"failure target, not yet failed", []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue, "BackoffLimitExceeded")}, JobRunning, ""},
		{"complete", []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, ""), cond(batchv1.JobComplete, corev1.ConditionTrue, "")}, JobSucceeded, ""},
		{"failed", []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionTrue, "DeadlineExceeded")}, JobFailed, "DeadlineExceeded"},
		{"a false Failed condition", []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionFalse, "x")}, JobRunning, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, _ := StateOf(&batchv1.Job{Status: batchv1.JobStatus{Conditions: tt.conds}})
			if got != tt.want || reason != tt.wantReason {
				t.Fatalf("StateOf = %s %q, want %s %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestFailureEvent(t *testing.T) {
	failure := Failure("team/pr-1-0123456-abcde", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	if failure != "build Job team/pr-1-0123456-abcde failed (BackoffLimitExceeded: Job has reached the specified backoff limit)" {
		t.Fatalf("Failure = %q", failure)
	}
	if got := Failure("j", "", ""); got != "build Job j failed (Failed)" {
		t.Fatalf("Failure without reason = %q", got)
	}
	var long strings.Builder
	for i := range 100 {
		long.WriteString(strings.Repeat("x", 30) + " line " + string(rune('a'+i%26)) + "\n")
	}
	tests := []struct {
		name      string
		log       string
		want      []string
		wantLines int
	}{
		{"no log", "", []string{failure, "no build log is left to show"}, -1},
		{"a short log, colors and blank lines dropped", "INFO[0000] Retrieving image\n\n\x1b[31mERRO\x1b[0m[0003] error building image: RUN make failed\n",
			[]string{failure + "; last lines of the build log:\nINFO[0000] Retrieving image\nERRO[0003] error building image: RUN make failed"}, 2},
		{"a long log keeps its end within 1 KiB", long.String(), []string{"line v"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FailureEvent(failure, tt.log, nil)
			if len(got) > MaxEventMessage {
				t.Fatalf("%d bytes, more than %d", len(got), MaxEventMessage)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Fatalf("FailureEvent = %q, want it to hold %q", got, w)
				}
			}
			if tt.wantLines >= 0 && strings.Count(got, "\n") != tt.wantLines {
				t.Fatalf("FailureEvent = %q: %d log lines, want %d", got, strings.Count(got, "\n"), tt.wantLines)
			}
		})
	}
}

func TestTail(t *testing.T) {
	if got := Tail("a\nb\r\n\nc\n", 2); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("Tail = %q", got)
	}
	if got := Tail("", 5); len(got) != 0 {
		t.Fatalf("Tail of nothing = %q", got)
	}
}

func TestWithDefaultBuild(t *testing.T) {
	own := &catalystv1.ProjectBuild{Registry: "ghcr.io", Repository: "org/web"}
	tests := []struct {
		name  string
		build *catalystv1.ProjectBuild
		cfg   BuildConfig
		want  *catalystv1.ProjectBuild
		image string
	}{
		{name: "neither: still not configured", cfg: BuildConfig{DefaultRegistrySecret: "push"}},
		{name: "the Project's own build wins", build: own, cfg: BuildConfig{DefaultRegistry: "image-registry.openshift-image-registry.svc:5000"},
			want: own, image: "ghcr.io/org/web:" + fullSHA},
		{name: "the default registry, anonymous", cfg: BuildConfig{DefaultRegistry: "image-registry.openshift-image-registry.svc:5000"},
			want:  &catalystv1.ProjectBuild{Registry: "image-registry.openshift-image-registry.svc:5000"},
			image: "image-registry.openshift-image-registry.svc:5000/team/web:" + fullSHA},
		{name: "the default registry with its Secret", cfg: BuildConfig{DefaultRegistry: "registry.internal:5000", DefaultRegistrySecret: "push"},
			want:  &catalystv1.ProjectBuild{Registry: "registry.internal:5000", RegistrySecretRef: &catalystv1.LocalObjectReference{Name: "push"}},
			image: "registry.internal:5000/team/web:" + fullSHA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := catalysttest.Project("team", "web")
			p.Spec.Build = tt.build
			got := WithDefaultBuild(p, tt.cfg)
			if !equality.Semantic.DeepEqual(got.Spec.Build, tt.want) {
				t.Fatalf("spec.build = %+v, want %+v", got.Spec.Build, tt.want)
			}
			if p.Spec.Build != tt.build {
				t.Fatal("the Project itself was changed")
			}
			if img := ImageReference(got, fullSHA); img != tt.image {
				t.Fatalf("image = %q, want %q", img, tt.image)
			}
			if tt.want != nil && tt.build == nil {
				env, _ := buildFixture()
				job := BuildJob(BuildInput{Env: env, Project: got, Name: "n", Commit: fullSHA, Image: tt.image, Config: tt.cfg})
				if args := job.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--dockerfile=/kaniko/buildcontext/Dockerfile") ||
					slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--context-sub-path") }) {
					t.Fatalf("args %q: want Kaniko's defaults (Dockerfile at the root, the whole repository)", args)
				}
			}
		})
	}
}

func TestGitCAConfigMap(t *testing.T) {
	if GitCAConfigMap("team", nil) != nil {
		t.Fatal("a ConfigMap without a bundle")
	}
	cm := GitCAConfigMap("team", []byte("PEM"))
	if cm.Namespace != "team" || cm.Name != GitCAConfigMapName || cm.Data[GitCAKey] != "PEM" || cm.Kind != "ConfigMap" {
		t.Fatalf("ConfigMap = %+v", cm)
	}
	if !labels.IsManaged(cm.Labels) || len(cm.OwnerReferences) != 0 {
		t.Fatalf("labels %v, owners %v: want the operator's label and no owner (the namespace's Projects share it)", cm.Labels, cm.OwnerReferences)
	}
}
