package catalyst

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// DefaultBuilderImage is the Kaniko executor the build Jobs run when neither --catalyst-builder-image nor
// RELATED_IMAGE_KANIKO names another.
const DefaultBuilderImage = "gcr.io/kaniko-project/executor:v1.23.2"

// BuildConfig is the operator's build settings (main.go's flags).
type BuildConfig struct {
	// BuilderImage is the Kaniko executor image the build Jobs run.
	BuilderImage string
	// InsecureRegistries are registries (host or host:port) spoken to over plain http besides loopback
	// ones, by the operator and by the builder.
	InsecureRegistries []string
	// Registries, when not empty, are the only registries (host for every port, or host:port) a Project
	// may name (--catalyst-registries): any other is neither asked nor pushed to (RegistryNotAllowed).
	Registries []string
	// DefaultRegistry is where a Project without spec.build keeps its images, as
	// <DefaultRegistry>/<Project namespace>/<Project name> (--catalyst-default-registry); without it such
	// a Project is BuildNotConfigured.
	DefaultRegistry string
	// DefaultRegistrySecret names a kubernetes.io/dockerconfigjson Secret in each Project's namespace
	// holding the default registry's credentials (--catalyst-default-registry-secret); anonymous when
	// empty.
	DefaultRegistrySecret string
	// GitCABundle is PEM certificates trusted for https Git servers besides the system's
	// (--catalyst-git-ca-file): the build Jobs get them as ConfigMap GitCAConfigMapName.
	GitCABundle []byte
	// GitAllowed says whether the operator may fetch from a repository URL, and why not: the same rule
	// as the deploy's fetches (--catalyst-git-hosts). Nil allows every host.
	GitAllowed func(rawURL string) error
	// GitHosts are the Git hosts an administrator listed (--catalyst-git-hosts): the build pods reach a
	// listed host on a private address (BuildEgress); any other only on a public one.
	GitHosts []string
	// RegistryTimeout bounds one image check; DefaultRegistryTimeout when zero.
	RegistryTimeout time.Duration
}

// DefaultRegistryTimeout bounds an image check when BuildConfig says nothing: a registry slower than
// that fails its Environment (RegistryUnreachable), retried later, and holds no worker longer.
const DefaultRegistryTimeout = 30 * time.Second

// WithDefaultBuild is p when it has spec.build; else, when cfg names a default registry, a copy of p
// whose spec.build pushes to <DefaultRegistry>/<namespace>/<name> with Kaniko's defaults (Dockerfile
// at the repository root, the whole repository as context) and DefaultRegistrySecret's credentials;
// else p, still without spec.build.
func WithDefaultBuild(p *catalystv1.Project, cfg BuildConfig) *catalystv1.Project {
	if p.Spec.Build != nil || cfg.DefaultRegistry == "" {
		return p
	}
	out := p.DeepCopy()
	out.Spec.Build = &catalystv1.ProjectBuild{Registry: cfg.DefaultRegistry}
	if cfg.DefaultRegistrySecret != "" {
		out.Spec.Build.RegistrySecretRef = &catalystv1.LocalObjectReference{Name: cfg.DefaultRegistrySecret}
	}
	return out
}

// Build Job constants. They are documented in docs/catalyst.md, "Builds".
const (
	// BuildApp is the app.kubernetes.io/name of build Jobs and their pods.
	BuildApp = "catalyst-build"
	// BuildContainer is the builder container's name, whose log the operator reads when a build fails.
	BuildContainer = "build"
	// BuildBackoffLimit is how many times a build pod that failed is started again before the Job fails:
	// once, for a node lost mid-build; a Dockerfile that fails fails twice and stops there.
	BuildBackoffLimit int32 = 1
	// BuildTTLSeconds is how long a finished build Job (and its pod, with its log) stays.
	BuildTTLSeconds int32 = 3600
	// DefaultBuildTimeoutSeconds bounds a build when the Project does not: its activeDeadlineSeconds.
	DefaultBuildTimeoutSeconds int64 = 1800
	// BuildContextDir is where Kaniko clones a git build context.
	BuildContextDir = "/kaniko/buildcontext"
	// DockerConfigDir is where Kaniko reads registry credentials (config.json).
	DockerConfigDir = "/kaniko/.docker"
	// BuilderCertDir is the Kaniko image's SSL_CERT_DIR, which holds its ca-certificates.crt: Go reads
	// every file in it into the system pool, which Kaniko's git clone (go-git) and pushes use.
	BuilderCertDir = "/kaniko/ssl/certs"
	// GitCAFile is the file name, in BuilderCertDir, of the operator's Git CA bundle.
	GitCAFile = "catalyst-git-ca.crt"
)

// Labels and annotations on build Jobs, besides the recommended labels and the Environment's
// catalyst.dev/* labels.
var (
	// BuildOwnerUIDLabel holds the Environment's UID: the operator lists and deletes only Jobs carrying
	// it (and its managed-by label), and never touches another Job.
	BuildOwnerUIDLabel = OwnerUIDAnnotation
	// BuildCommitAnnotation is the commit a Job builds.
	BuildCommitAnnotation = oplabels.Annotation("catalyst-commit")
	// BuildImageAnnotation is the image a Job pushes.
	BuildImageAnnotation = oplabels.Annotation("catalyst-image")
	// BuildAttemptAnnotation is the Job's rank among the builds of its commit (1, then 2 after a retry...).
	BuildAttemptAnnotation = oplabels.Annotation("catalyst-attempt")
)

// BuildJobName is the build Job of an environment's commit: the environment's name, the commit's first
// seven digits and five hexadecimal digits of a hash of the environment's namespace and name and the
// retry annotation's value, at most 63 characters. The hash keeps apart two Environments of the same name
// in different namespaces (their Jobs share the Project's namespace), and a retried build from the Job
// that failed. The environment's name is cut to fit.
func BuildJobName(env *catalystv1.Environment, commit, retry string) string {
	short := commit[:min(7, len(commit))]
	sum := sha256.Sum256([]byte(env.Namespace + "/" + env.Name + "\x00" + retry))
	suffix := "-" + short + "-" + hex.EncodeToString(sum[:])[:5]
	prefix := env.Name[:min(len(env.Name), 63-len(suffix))]
	return strings.TrimRight(prefix, "-") + suffix
}

// BuildInput is what a build Job is made from.
type BuildInput struct {
	// Env is the environment whose image is built.
	Env *catalystv1.Environment
	// Project is its Project, whose spec.build and spec.source say where and how.
	Project *catalystv1.Project
	// Name is the Job's name (BuildJobName).
	Name string
	// Commit is the whole commit id checked out.
	Commit string
	// Image is the destination, <registry>/<repository>:<commit>.
	Image string
	// Attempt is the Job's rank among the builds of the commit, from 1.
	Attempt int32
	// Config is the operator's build settings.
	Config BuildConfig
}

// Branch is the branch whose history holds the environment's commit: the Environment's
// spec.source.branch, else its Project's branch.
func Branch(env *catalystv1.Environment, p *catalystv1.Project) string {
	if env.Spec.Source.Branch != "" {
		return env.Spec.Source.Branch
	}
	if p.Spec.Source.Branch != "" {
		return p.Spec.Source.Branch
	}
	return "main"
}

// GitContext is Kaniko's git build context for a commit: git://<host>/<path>#refs/heads/<branch>#<commit>.
// Kaniko clones the branch over https (GIT_PULL_METHOD) and checks out exactly the commit, which must
// therefore be in the branch's history and be a whole commit id.
func GitContext(repositoryURL, branch, commit string) string {
	repo := strings.TrimPrefix(strings.TrimPrefix(repositoryURL, "https://"), "http://")
	return "git://" + repo + "#refs/heads/" + branch + "#" + commit
}

// BuildJob is the Kaniko Job that builds in.Image from in.Commit and pushes it. It runs in the Project's
// namespace, where the Secrets it mounts are. See docs/catalyst.md, "Builds", for what it runs with and why.
func BuildJob(in BuildInput) *batchv1.Job {
	env, p := in.Env, in.Project
	b := p.Spec.Build
	parts := PartsOf(env)
	labels := oplabels.Labels(BuildApp, LabelValue(env.Name))
	labels[catalystv1.LabelTeam] = LabelValue(parts.Team)
	labels[catalystv1.LabelProject] = LabelValue(parts.Project)
	labels[catalystv1.LabelEnvironment] = LabelValue(parts.Environment)
	labels[BuildOwnerUIDLabel] = string(env.UID)
	annotations := map[string]string{
		OwnerAnnotation:        Owner(env),
		BuildCommitAnnotation:  in.Commit,
		BuildImageAnnotation:   in.Image,
		BuildAttemptAnnotation: strconv.Itoa(int(in.Attempt)),
	}

	args := []string{
		"--context=" + GitContext(p.Spec.Source.RepositoryURL, Branch(env, p), in.Commit),
		"--dockerfile=" + path.Join(BuildContextDir, dockerfile(b)),
		"--destination=" + in.Image,
		"--git=single-branch=true",
		"--log-format=text",
		"--label=org.opencontainers.image.revision=" + in.Commit,
		"--label=org.opencontainers.image.source=" + p.Spec.Source.RepositoryURL,
	}
	if c := path.Clean(b.Context); c != "." && c != "" {
		args = append(args, "--context-sub-path="+c)
	}
	if PlainHTTP(b.Registry, in.Config.InsecureRegistries) {
		args = append(args, "--insecure-registry="+b.Registry)
	}

	envVars := []corev1.EnvVar{{Name: "GIT_PULL_METHOD", Value: "https"}}
	if ref := p.Spec.Source.SecretRef; ref != nil {
		// Kaniko reads the repository's credentials from these variables; the values stay in the Secret.
		for _, kv := range [][2]string{{"GIT_TOKEN", "token"}, {"GIT_USERNAME", "username"}, {"GIT_PASSWORD", "password"}} {
			envVars = append(envVars, corev1.EnvVar{Name: kv[0], ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
					Key: kv[1], Optional: ptr.To(true)}}})
		}
	}

	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if ref := b.RegistrySecretRef; ref != nil {
		volumes = append(volumes, corev1.Volume{Name: "registry-credentials", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: ref.Name, DefaultMode: ptr.To[int32](0o400),
				Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: "config.json"}}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "registry-credentials", MountPath: DockerConfigDir, ReadOnly: true})
	}
	if len(in.Config.GitCABundle) > 0 {
		// One file beside the image's own bundle (subPath), not a directory over it: Go loads both.
		volumes = append(volumes, corev1.Volume{Name: "git-ca", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: GitCAConfigMapName},
				Items: []corev1.KeyToPath{{Key: GitCAKey, Path: GitCAFile}}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "git-ca", MountPath: path.Join(BuilderCertDir, GitCAFile),
			SubPath: GitCAFile, ReadOnly: true})
		// The Kaniko image sets it already; set here too so that another builder image reads the same place.
		envVars = append(envVars, corev1.EnvVar{Name: "SSL_CERT_DIR", Value: BuilderCertDir})
	}

	timeout := b.TimeoutSeconds
	if timeout <= 0 {
		timeout = DefaultBuildTimeoutSeconds
	}
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Namespace: p.Namespace, Labels: labels,
			Annotations: annotations},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(BuildBackoffLimit),
			ActiveDeadlineSeconds:   ptr.To(timeout),
			TTLSecondsAfterFinished: ptr.To(BuildTTLSeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{OwnerAnnotation: Owner(env)}},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            BuildContainer,
						Image:           in.Config.BuilderImage,
						Args:            args,
						Env:             envVars,
						VolumeMounts:    mounts,
						SecurityContext: builderSecurityContext(),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"),
								corev1.ResourceMemory: resource.MustParse("1Gi")},
							Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: volumes,
				},
			},
		},
	}
	if env.Namespace == p.Namespace {
		// Same namespace: the garbage collector deletes the Job with its Environment.
		job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(env, catalystv1.GroupVersion.WithKind("Environment"))}
	}
	return job
}

// BuilderCapabilities are the only capabilities the builder keeps: Kaniko unpacks the base image's
// layers and runs the Dockerfile's RUN steps in its own root file system as root, which needs file
// ownership and mode changes (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, SETFCAP for files with capabilities)
// and switching users for USER steps (SETUID, SETGID). Everything else is dropped.
var BuilderCapabilities = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETFCAP", "SETGID", "SETUID"}

// builderSecurityContext is as close to the restricted pod security standard as Kaniko allows: it must
// run as root with a writable root file system (it builds the image in it), so runAsNonRoot and
// readOnlyRootFilesystem cannot be set; it is the baseline standard, with no privilege escalation, the
// runtime's seccomp profile and only BuilderCapabilities.
func builderSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsUser:                ptr.To[int64](0),
		RunAsNonRoot:             ptr.To(false),
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(false),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: BuilderCapabilities},
	}
}

func dockerfile(b *catalystv1.ProjectBuild) string {
	if b.Dockerfile == "" {
		return "Dockerfile"
	}
	return path.Clean(b.Dockerfile)
}

// JobState is where a build Job is.
type JobState string

// JobState values.
const (
	JobRunning   JobState = "Running"
	JobSucceeded JobState = "Succeeded"
	JobFailed    JobState = "Failed"
)

// StateOf reads a Job's terminal conditions: Succeeded (Complete), Failed (with the condition's reason
// and message), else Running.
func StateOf(job *batchv1.Job) (state JobState, reason, message string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return JobSucceeded, c.Reason, c.Message
		case batchv1.JobFailed:
			return JobFailed, c.Reason, c.Message
		}
	}
	return JobRunning, "", ""
}

// Failure is status.build.failure for a failed Job: its reason and message.
func Failure(job, reason, message string) string {
	if reason == "" {
		reason = "Failed"
	}
	if message == "" {
		return fmt.Sprintf("build Job %s failed (%s)", job, reason)
	}
	return fmt.Sprintf("build Job %s failed (%s: %s)", job, reason, message)
}

// MaxEventMessage bounds a build failure event's message: events carry at most 1 KiB.
const MaxEventMessage = 1024

// LogLines is how many of a failed build's last log lines its event carries (fewer when they do not fit).
const LogLines = 20

// FailureEvent is the message of a failed build's Warning event: the failure, then as many of the
// build log's last lines as fit in MaxEventMessage (the last ones first kept), every line and the failure
// passed through Redact with secrets first. log may be empty: the pod may be gone, or never have run.
func FailureEvent(failure, log string, secrets []string) string {
	failure = Redact(failure, secrets)
	lines := Tail(log, LogLines)
	for i, l := range lines {
		lines[i] = Redact(l, secrets)
	}
	if len(lines) == 0 {
		return truncate(failure+"; no build log is left to show", MaxEventMessage)
	}
	head := failure + "; last lines of the build log:"
	budget := MaxEventMessage - len(head)
	var kept []string
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if len(l)+1 > budget {
			break
		}
		budget -= len(l) + 1
		kept = append([]string{l}, kept...)
	}
	if len(kept) == 0 {
		return truncate(head+"\n"+lines[len(lines)-1], MaxEventMessage)
	}
	return head + "\n" + strings.Join(kept, "\n")
}

// Tail is the last n non-empty lines of log, without their line ends and Kaniko's color codes.
func Tail(log string, n int) []string {
	var out []string
	for l := range strings.SplitSeq(log, "\n") {
		l = strings.TrimRight(stripANSI(l), "\r \t")
		if l != "" {
			out = append(out, l)
		}
	}
	return out[max(0, len(out)-n):]
}

// stripANSI removes terminal escape sequences (ESC [ ... letter).
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < '@' || s[j] > '~') {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// AttemptOf is a build Job's BuildAttemptAnnotation; 1 when it has none.
func AttemptOf(job *batchv1.Job) int32 {
	n, err := strconv.ParseInt(job.Annotations[BuildAttemptAnnotation], 10, 32)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}
