package catalyst

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// The suite's registry: a real one, in-process on 127.0.0.1, behind basic authentication.
var testRegistry *catalysttest.Registry

const (
	registryUser, registryPassword = "builder", "s3cret"
	// registrySecret is the dockerconfigjson Secret, in each team's namespace, of the registry's credentials.
	registrySecret = "registry"
	// gitSecret is the Secret of the repository's credentials a build Job refers to.
	gitSecret = "git"
)

// testBuild is the operator's build settings in this suite, set by testBuildConfig once the registry
// listens.
var testBuild catalyst.BuildConfig

// Build settings the suite's operator runs with.
const (
	// forbiddenGitHost is the one Git host builds may not clone from.
	forbiddenGitHost = "git.forbidden.test"
	// testGitCA stands for the PEM of --catalyst-git-ca-file: the operator copies it, it does not parse it.
	testGitCA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"
	// testRegistryTimeout bounds the suite's image checks.
	testRegistryTimeout = 3 * time.Second
)

// testBuildConfig is the suite's build settings: only loopback registries and ghcr.io may be used, a
// Project without spec.build builds into the suite's registry with the credentials of Secret
// registrySecret in its namespace, builds trust testGitCA and may not clone from forbiddenGitHost.
func testBuildConfig() catalyst.BuildConfig {
	testBuild = catalyst.BuildConfig{
		BuilderImage:          "kaniko.test/executor:v0",
		Registries:            []string{"127.0.0.1", "ghcr.io"},
		DefaultRegistry:       testRegistry.Host,
		DefaultRegistrySecret: registrySecret,
		GitCABundle:           []byte(testGitCA),
		GitHosts:              []string{"127.0.0.1"},
		GitAllowed: func(raw string) error {
			u, err := url.Parse(raw)
			if err != nil {
				return err
			}
			if u.Hostname() == forbiddenGitHost {
				return fmt.Errorf("repository %s: host %q is not one the operator may fetch from", raw, u.Hostname())
			}
			return nil
		},
		RegistryTimeout: testRegistryTimeout,
	}
	return testBuild
}

// commitSHA is a fresh whole commit id.
func commitSHA() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// buildTeam is a team whose Project builds into the suite's registry with the registry's credentials.
func buildTeam(ctx context.Context) team {
	GinkgoHelper()
	t := newTeam(ctx)
	Expect(k8s.Create(ctx, testRegistry.Secret(t.projectNS, registrySecret))).To(Succeed())
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.projectNS, Name: gitSecret},
		StringData: map[string]string{"token": "not-a-real-token"}})).To(Succeed())
	t.updateProject(ctx, func(p *catalystv1.Project) {
		p.Spec.Build = &catalystv1.ProjectBuild{Registry: testRegistry.Host, Dockerfile: "build/Dockerfile",
			RegistrySecretRef: &catalystv1.LocalObjectReference{Name: registrySecret}}
		p.Spec.Source.SecretRef = &catalystv1.LocalObjectReference{Name: gitSecret}
	})
	return t
}

// updateProject changes the team's Project "web", which its controller writes too.
func (t team) updateProject(ctx context.Context, change func(*catalystv1.Project)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &catalystv1.Project{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: t.projectNS, Name: "web"}, p); err != nil {
			return err
		}
		change(p)
		return k8s.Update(ctx, p)
	})).To(Succeed())
}

// imageOf is the image of a team's commit in the suite's registry.
// createAt creates the team's environment name at commit.
func (t team) createAt(ctx context.Context, name, commit string) *catalystv1.Environment {
	GinkgoHelper()
	env := t.environment(name)
	env.Spec.Source.CommitSHA = commit
	Expect(k8s.Create(ctx, env)).To(Succeed())
	return env
}

// createAtNewCommit creates the team's environment name at a new commit and returns it with the commit.
func (t team) createAtNewCommit(ctx context.Context, name string) (*catalystv1.Environment, string) {
	GinkgoHelper()
	commit := commitSHA()
	return t.createAt(ctx, name, commit), commit
}

// pushAndFinish plays a build Job that pushed image and succeeded, and waits until env's BuildReady is
// True with ImagePushed, the image and its digest, and whatever more also says of the Environment.
func pushAndFinish(ctx context.Context, env *catalystv1.Environment, job *batchv1.Job, image string, also func(g Gomega, got *catalystv1.Environment)) {
	GinkgoHelper()
	digest, err := testRegistry.Push(image)
	Expect(err).NotTo(HaveOccurred())
	finishJob(ctx, job, true, "")
	Eventually(func(g Gomega) {
		got := getEnv(ctx, env)
		c := condition(g, got, catalystv1.ConditionBuildReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(catalystv1.ReasonImagePushed))
		g.Expect(got.Status.Build.Image).To(Equal(image))
		g.Expect(got.Status.Build.Digest).To(Equal(digest))
		if also != nil {
			also(g, got)
		}
	}).Should(Succeed())
}

func (t team) imageOf(commit string) string {
	return testRegistry.Host + "/" + t.projectNS + "/web:" + commit
}

// buildJobs lists the build Jobs made for env.
func buildJobs(ctx context.Context, g Gomega, t team, env *catalystv1.Environment) []batchv1.Job {
	var jobs batchv1.JobList
	g.Expect(k8s.List(ctx, &jobs, client.InNamespace(t.projectNS),
		client.MatchingLabels{catalyst.BuildOwnerUIDLabel: string(getEnv(ctx, env).UID)})).To(Succeed())
	return jobs.Items
}

// theBuildJob waits for env's one build Job and returns it.
func theBuildJob(ctx context.Context, t team, env *catalystv1.Environment, commit string) *batchv1.Job {
	GinkgoHelper()
	var job batchv1.Job
	Eventually(func(g Gomega) {
		jobs := buildJobs(ctx, g, t, env)
		i := slices.IndexFunc(jobs, func(j batchv1.Job) bool { return j.Annotations[catalyst.BuildCommitAnnotation] == commit })
		g.Expect(i).NotTo(Equal(-1), "no build Job for %s among %d", commit, len(jobs))
		job = jobs[i]
	}).Should(Succeed())
	return &job
}

// finishJob plays the Job controller (envtest runs none, and kwok no container): the Job succeeded or
// failed, with the conditions batch/v1 requires (SuccessCriteriaMet or FailureTarget first).
func finishJob(ctx context.Context, job *batchv1.Job, succeeded bool, reason string) {
	GinkgoHelper()
	finishJobSaying(ctx, job, succeeded, reason, "set by the test")
}

// finishJobSaying is finishJob with the conditions' message.
func finishJobSaying(ctx context.Context, job *batchv1.Job, succeeded bool, reason, message string) {
	GinkgoHelper()
	Expect(testutil.FinishJob(ctx, k8s, job, succeeded, reason, message)).To(Succeed())
}

// normalEvents lists env's Normal events of reason.
func normalEvents(ctx context.Context, env *catalystv1.Environment, reason string) func() []string {
	return eventMessages(ctx, env, corev1.EventTypeNormal, reason)
}

// expectNoWrites touches env and checks that neither it nor its team's namespaces are written.
func expectNoWrites(ctx context.Context, t team, env *catalystv1.Environment, ns string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		before := writes.In(t.envNS, ns, t.projectNS)
		nudge(ctx, env)
		g.Consistently(func() int { return writes.In(t.envNS, ns, t.projectNS) - before }).WithTimeout(time.Second).Should(BeZero())
	}).Should(Succeed())
}

var _ = Describe("Environment builds", func() {
	It("finds the commit's image in the registry and builds nothing", func(ctx SpecContext) {
		t := buildTeam(ctx)
		commit := commitSHA()
		digest := t.pushImage(commit)
		env := t.createAt(ctx, "pr-1", commit)

		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			c := condition(g, got, catalystv1.ConditionBuildReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonImageExists))
			g.Expect(got.Status.Build).NotTo(BeNil())
			g.Expect(*got.Status.Build).To(Equal(catalystv1.BuildStatus{CommitSHA: commit, Image: t.imageOf(commit), Digest: digest}))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(buildJobs(ctx, g, t, env)).To(BeEmpty()) }).Should(Succeed())
		expectNoWrites(ctx, t, env, t.namespaceOf("pr-1"))
	})

	It("builds an absent image with a Kaniko Job, is ready once the registry has it, and builds a new commit again", func(ctx SpecContext) {
		t := buildTeam(ctx)
		env, commit := t.createAtNewCommit(ctx, "pr-2")

		By("a Job builds it")
		job := theBuildJob(ctx, t, env, commit)
		Expect(job.Name).To(Equal(catalyst.BuildJobName(env, commit, "")))
		c := job.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal(testBuild.BuilderImage))
		Expect(c.Args).To(ContainElements(
			"--context=git://github.com/org/repo#refs/heads/feature/login#"+commit,
			"--dockerfile=/kaniko/buildcontext/build/Dockerfile",
			"--destination="+t.imageOf(commit),
			"--insecure-registry="+testRegistry.Host,
		))
		Expect(job.Spec.Template.Spec.Volumes).To(ConsistOf(HaveField("Secret.SecretName", registrySecret),
			HaveField("ConfigMap.Name", catalyst.GitCAConfigMapName)))
		Expect(*job.Spec.Template.Spec.AutomountServiceAccountToken).To(BeFalse())
		Expect(*job.Spec.BackoffLimit).To(Equal(catalyst.BuildBackoffLimit))
		Expect(*job.Spec.ActiveDeadlineSeconds).To(Equal(catalyst.DefaultBuildTimeoutSeconds), "the CRD's default timeoutSeconds")
		Expect(*job.Spec.TTLSecondsAfterFinished).To(Equal(catalyst.BuildTTLSeconds))
		Expect(job.Annotations).To(HaveKeyWithValue(catalyst.OwnerAnnotation, env.Namespace+"/"+env.Name))
		for _, e := range c.Env {
			Expect(e.Value == "" || e.Name == "GIT_PULL_METHOD" || e.Name == "SSL_CERT_DIR").To(BeTrue(), "no credential value in the Job: %+v", e)
		}
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseBuilding))
			g.Expect(condition(g, got, catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonBuilding))
			g.Expect(got.Status.Build.JobName).To(Equal(job.Name))
			g.Expect(got.Status.Build.Attempts).To(Equal(int32(1)))
			g.Expect(got.Status.Build.Image).To(BeEmpty(), "no image before the registry has it")
		}).Should(Succeed())
		Eventually(normalEvents(ctx, env, catalystv1.EventBuildStarted)).Should(HaveLen(1))
		expectNoWrites(ctx, t, env, t.namespaceOf("pr-2"))

		By("the Job succeeds, having pushed the image")
		pushAndFinish(ctx, env, job, t.imageOf(commit), func(g Gomega, got *catalystv1.Environment) {
			g.Expect(got.Status.Phase).NotTo(Equal(catalystv1.PhaseBuilding))
		})
		Eventually(normalEvents(ctx, env, catalystv1.EventBuildSucceeded)).Should(HaveLen(1))
		expectNoWrites(ctx, t, env, t.namespaceOf("pr-2"))

		By("a new commit is built by a new Job; a running build of a superseded commit is deleted")
		second, third := commitSHA(), commitSHA()
		setCommit(ctx, env, second)
		secondJob := theBuildJob(ctx, t, env, second)
		Expect(secondJob.Name).NotTo(Equal(job.Name))
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonBuilding))
			g.Expect(got.Status.Build.CommitSHA).To(Equal(second))
			g.Expect(got.Status.Build.Attempts).To(Equal(int32(1)))
		}).Should(Succeed())
		setCommit(ctx, env, third)
		theBuildJob(ctx, t, env, third)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(secondJob), &batchv1.Job{}))
		}).Should(BeTrue(), "the running Job of the superseded commit is deleted")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})).To(Succeed(), "a finished Job is left to its TTL")
	})

	It("reports a failed build with its reason in an event, builds it again only when asked, and never twice on its own", func(ctx SpecContext) {
		t := buildTeam(ctx)
		env, commit := t.createAtNewCommit(ctx, "pr-3")
		job := theBuildJob(ctx, t, env, commit)

		finishJob(ctx, job, false, batchv1.JobReasonBackoffLimitExceeded)
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseFailed))
			c := condition(g, got, catalystv1.ConditionBuildReady)
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonBuildFailed))
			g.Expect(c.Message).To(ContainSubstring(batchv1.JobReasonBackoffLimitExceeded))
			g.Expect(c.Message).To(ContainSubstring(catalystv1.AnnotationRetryBuild))
			g.Expect(got.Status.Build.Failure).To(ContainSubstring(job.Name))
		}).Should(Succeed())
		Eventually(warningEvents(ctx, env, catalystv1.ReasonBuildFailed)).Should(ConsistOf(
			And(ContainSubstring(batchv1.JobReasonBackoffLimitExceeded), ContainSubstring("no build log is left to show"))))
		expectNoWrites(ctx, t, env, t.namespaceOf("pr-3"))

		By("the failed Job's TTL runs out: still no new Job")
		Expect(k8s.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		nudge(ctx, env)
		Consistently(func(g Gomega) { g.Expect(buildJobs(ctx, g, t, env)).To(BeEmpty()) }).Should(Succeed())
		Expect(condition(Default, getEnv(ctx, env), catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonBuildFailed))

		By("the retry annotation builds it again")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := getEnv(ctx, env)
			got.Annotations[catalystv1.AnnotationRetryBuild] = "1"
			return k8s.Update(ctx, got)
		})).To(Succeed())
		again := theBuildJob(ctx, t, env, commit)
		Expect(again.Name).To(Equal(catalyst.BuildJobName(env, commit, "1")))
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonBuilding))
			g.Expect(got.Status.Build.Attempts).To(Equal(int32(2)))
			g.Expect(got.Status.Build.Failure).To(BeEmpty())
			g.Expect(got.Status.Build.Retry).To(Equal("1"))
		}).Should(Succeed())
	})

	It("never adopts a Job of the build's name that it did not make", func(ctx SpecContext) {
		t := buildTeam(ctx)
		commit := commitSHA()
		env := t.environment("pr-4")
		env.Spec.Source.CommitSHA = commit
		theirs := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: t.projectNS, Name: catalyst.BuildJobName(env, commit, "")},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		Expect(k8s.Create(ctx, env)).To(Succeed())
		expectCondition(ctx, env, catalystv1.ConditionBuildReady, catalystv1.ReasonNameConflict, "was not made by the operator")
		Eventually(warningEvents(ctx, env, catalystv1.ReasonNameConflict)).ShouldNot(BeEmpty())
		Consistently(func(g Gomega) {
			j := &batchv1.Job{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), j)).To(Succeed())
			g.Expect(j.ResourceVersion).To(Equal(theirs.ResourceVersion))
		}).Should(Succeed())
	})

	It("reports what only the user can fix: a missing default registry Secret, a missing Secret, an abbreviated commit to build", func(ctx SpecContext) {
		t := newTeam(ctx)
		env := t.environment("pr-5")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		expectBuild := func(reason, msg string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				got := getEnv(ctx, env)
				c := condition(g, got, catalystv1.ConditionBuildReady)
				g.Expect(c.Reason).To(Equal(reason))
				g.Expect(c.Message).To(ContainSubstring(msg))
				g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseFailed))
			}).Should(Succeed())
			Eventually(warningEvents(ctx, env, reason)).ShouldNot(BeEmpty())
		}
		// No spec.build: the default registry, whose Secret the team has not made.
		expectBuild(catalystv1.ReasonSecretInvalid, "named by --catalyst-default-registry-secret does not exist")
		expectNoWrites(ctx, t, env, t.namespaceOf("pr-5"))

		t.updateProject(ctx, func(p *catalystv1.Project) {
			p.Spec.Build = &catalystv1.ProjectBuild{Registry: testRegistry.Host, RegistrySecretRef: &catalystv1.LocalObjectReference{Name: registrySecret}}
		})
		expectBuild(catalystv1.ReasonSecretInvalid, "named by spec.build.registrySecretRef does not exist")

		By("the Secret appears; the fixture's commit a1b2c3d4e5f6 is abbreviated and its image absent")
		Expect(k8s.Create(ctx, testRegistry.Secret(t.projectNS, registrySecret))).To(Succeed())
		nudge(ctx, env)
		expectBuild(catalystv1.ReasonCommitAbbreviated, "is abbreviated")
		Expect(buildJobs(ctx, Default, t, env)).To(BeEmpty())

		By("pushed by other means, the abbreviated commit's image is found")
		_, err := testRegistry.Push(t.imageOf("a1b2c3d4e5f6"))
		Expect(err).NotTo(HaveOccurred())
		nudge(ctx, env)
		Eventually(func(g Gomega) {
			g.Expect(condition(g, getEnv(ctx, env), catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonImageExists))
		}).Should(Succeed())
	})

	It("tells a registry that refuses the credentials", func(ctx SpecContext) {
		t := buildTeam(ctx)
		wrong := testRegistry.Secret(t.projectNS, "wrong")
		wrong.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"` + testRegistry.Host + `":{"username":"` + registryUser + `","password":"wrong"}}}`)
		Expect(k8s.Create(ctx, wrong)).To(Succeed())
		t.updateProject(ctx, func(p *catalystv1.Project) { p.Spec.Build.RegistrySecretRef.Name = "wrong" })
		env := t.environment("pr-6")
		env.Spec.Source.CommitSHA = commitSHA()
		Expect(k8s.Create(ctx, env)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonRegistryUnauthorized))
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseFailed))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(buildJobs(ctx, g, t, env)).To(BeEmpty()) }).Should(Succeed())
	})
})
