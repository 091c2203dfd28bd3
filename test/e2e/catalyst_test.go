//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/catalyst/source/sourcetest"
)

// The catalyst scenarios run their operator for the whole cluster (WATCH_NAMESPACE empty, OLM's
// AllNamespaces install mode): an Environment's namespace is one the operator makes, outside any
// namespace a scoped operator could be given. kube-controller-manager's namespace controller empties and
// removes the namespaces the operator deletes, as in a real cluster.

// An Environment is Ready only once its commit's image is in its Project's registry and the commit is
// fetched over https and deployed. The suite therefore runs, in its own process on 127.0.0.1, an OCI
// registry (catalysttest.StartRegistry) and a Git server over https with a certificate of its own
// (sourcetest.Server), started in BeforeSuite and stopped in AfterSuite; catalyst operators trust that
// certificate (--catalyst-git-ca-file) and fetch only from 127.0.0.1. kwok runs the pods of the
// Deployment the operator applies, so it becomes available as on a real cluster.
var (
	catalystRegistry *catalysttest.Registry
	catalystGit      *sourcetest.Server
	catalystDir      string // the Git server's repositories (under git/) and its CA file
)

// startCatalystServers starts the registry and the Git server and writes the Git server's CA file.
func startCatalystServers() {
	GinkgoHelper()
	var err error
	catalystDir, err = os.MkdirTemp("", "platform-operator-e2e-catalyst-")
	Expect(err).NotTo(HaveOccurred())
	catalystRegistry = catalysttest.StartRegistry("", "")
	catalystGit = &sourcetest.Server{Root: filepath.Join(catalystDir, "git"), SHA1InWant: true}
	catalystGit.Start()
	Expect(os.WriteFile(catalystCAFile(), catalystGit.CABundle(), 0o600)).To(Succeed())
}

// stopCatalystServers stops what startCatalystServers started, if it did.
func stopCatalystServers() {
	if catalystGit != nil {
		catalystGit.Close()
	}
	if catalystRegistry != nil {
		catalystRegistry.Close()
	}
	if catalystDir != "" {
		_ = os.RemoveAll(catalystDir)
	}
}

func catalystCAFile() string { return filepath.Join(catalystDir, "git-ca.pem") }

// catalystOperator is the configuration of a catalyst scenario's operator: the whole cluster, trusting
// the suite's Git server.
func catalystOperator() operatorConfig {
	return operatorConfig{args: []string{"--catalyst-git-ca-file=" + catalystCAFile(), "--catalyst-git-hosts=127.0.0.1", "--catalyst-registries=127.0.0.1",
		"--catalyst-allowed-domains=preview.example.com", "--catalyst-allowed-cluster-issuers=" + catalysttest.Issuer}}
}

// catalystTeam is a scenario's team: the team namespace holds Project "web", a second namespace the
// Environments. The Project deploys the manifests of the team's repository on the suite's Git server,
// whose one commit's image is in the suite's registry with digest (unless the team was made to build it:
// then digest is empty). repo is the team's repository, project its Project as created.
type catalystTeam struct {
	name, envNS, commit, digest string
	repo                        *sourcetest.Repo
	project                     *catalystv1.Project
}

func newCatalystTeam(ctx context.Context) catalystTeam {
	GinkgoHelper()
	return makeCatalystTeam(ctx, true)
}

// newCatalystBuildTeam is a team whose registry does not have its commit's image: the operator builds it.
func newCatalystBuildTeam(ctx context.Context) catalystTeam {
	GinkgoHelper()
	return makeCatalystTeam(ctx, false)
}

// makeCatalystTeam makes the team; push says whether its commit's image is pushed to the registry first.
func makeCatalystTeam(ctx context.Context, push bool) catalystTeam {
	GinkgoHelper()
	t := catalystTeam{name: newNamespace(ctx, nil)}
	t.envNS = t.name + "-web"
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.envNS}})).To(Succeed())
	repo, err := sourcetest.Init(filepath.Join(catalystGit.Root, t.name, "web"), "main")
	Expect(err).NotTo(HaveOccurred())
	t.commit, err = repo.Commit("web: a Deployment of the environment's image", catalysttest.AppFiles())
	Expect(err).NotTo(HaveOccurred())
	p := catalysttest.Project(t.name, "web")
	p.Spec.Source.RepositoryURL = catalystGit.URL(repo.Dir)
	p.Spec.Deployment = catalystv1.ProjectDeployment{Type: catalystv1.DeploymentManifest, Path: catalysttest.AppPath}
	p.Spec.Build = &catalystv1.ProjectBuild{Registry: catalystRegistry.Host}
	p.Spec.AllowedEnvironmentNamespaces = []string{t.envNS} // its Environments live in their own namespace
	if push {
		// As a build would have pushed it: nothing is built (no Kaniko Job).
		t.digest, err = catalystRegistry.Push(catalyst.ImageReference(p, t.commit))
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(k8s.Create(ctx, p)).To(Succeed())
	t.repo, t.project = repo, p
	return t
}

// environment is a pull-request Environment of the team at its commit.
func (t catalystTeam) environment(name string) *catalystv1.Environment {
	env := catalysttest.Environment(t.envNS, name, t.name, "web")
	env.Spec.ProjectRef.Namespace = t.name
	env.Spec.Source.CommitSHA = t.commit
	return env
}

// image is the image the operator deploys for the team's commit: pinned by digest.
func (t catalystTeam) image() string {
	return catalystRegistry.Host + "/" + t.name + "/web@" + t.digest
}

func getEnvironment(ctx context.Context, env *catalystv1.Environment) (*catalystv1.Environment, error) {
	got := &catalystv1.Environment{}
	return got, k8s.Get(ctx, client.ObjectKeyFromObject(env), got)
}

// environmentReady waits for the environment's namespace, plays cert-manager for its Certificate, and
// waits for phase Ready (which needs the image found and the commit deployed and available); it returns
// the namespace.
func environmentReady(ctx context.Context, env *catalystv1.Environment) string {
	GinkgoHelper()
	var ns string
	Eventually(ctx, func(g Gomega) {
		got, err := getEnvironment(ctx, env)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Namespace).NotTo(BeEmpty(), "no namespace yet: %+v", got.Status.Conditions)
		ns = got.Status.Namespace
	}).Should(Succeed())
	markCertificateReady(ctx, ns, catalyst.CertificateName)
	Eventually(ctx, func(g Gomega) {
		got, err := getEnvironment(ctx, env)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseReady), "conditions: %+v", got.Status.Conditions)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, catalystv1.ConditionReady)).To(BeTrue())
	}).Should(Succeed())
	return ns
}

// gone passes when obj no longer exists.
func gone(ctx context.Context, obj client.Object) func(Gomega) {
	return func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s still exists (get: %v)", describe(obj), err)
	}
}

// namespaceBeforeEnvironment waits for both the environment and its namespace to go, failing if the
// environment is ever gone while its namespace still exists.
func namespaceBeforeEnvironment(ctx context.Context, env *catalystv1.Environment, ns string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		_, envErr := getEnvironment(ctx, env)
		nsErr := k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(envErr) {
			Expect(apierrors.IsNotFound(nsErr)).To(BeTrue(), "Environment %s is gone while namespace %s still exists (%v)", env.Name, ns, nsErr)
		}
		g.Expect(apierrors.IsNotFound(envErr)).To(BeTrue(), "Environment %s still exists", env.Name)
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

// phaseLog records the phases an Environment goes through, polled by a goroutine from recordPhases, so a
// test can assert the phases it passed without racing a transient one.
type phaseLog struct {
	mu     sync.Mutex
	phases []catalystv1.Phase // each change, in order
}

// recordPhases polls env's phase until ctx ends or the returned stop is called.
func recordPhases(ctx context.Context, env *catalystv1.Environment) (*phaseLog, func()) {
	log := &phaseLog{}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if got, err := getEnvironment(ctx, env); err == nil {
				log.mu.Lock()
				if n := len(log.phases); got.Status.Phase != "" && (n == 0 || log.phases[n-1] != got.Status.Phase) {
					log.phases = append(log.phases, got.Status.Phase)
				}
				log.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return log, func() { cancel(); <-done }
}

// seen is the phases recorded so far.
func (l *phaseLog) seen() []catalystv1.Phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.phases)
}

// awaitBuild waits for env to be Building commit through a Job of its own in the Project's namespace
// whose arguments name the commit, and returns the Job.
func (t catalystTeam) awaitBuild(ctx context.Context, env *catalystv1.Environment, commit string) *batchv1.Job {
	GinkgoHelper()
	job := &batchv1.Job{}
	Eventually(ctx, func(g Gomega) {
		got, err := getEnvironment(ctx, env)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseBuilding), "conditions: %+v", got.Status.Conditions)
		c := meta.FindStatusCondition(got.Status.Conditions, catalystv1.ConditionBuildReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(catalystv1.ReasonBuilding))
		g.Expect(got.Status.Build).NotTo(BeNil())
		g.Expect(got.Status.Build.CommitSHA).To(Equal(commit))
		g.Expect(got.Status.Build.JobName).NotTo(BeEmpty())
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: t.name, Name: got.Status.Build.JobName}, job)).To(Succeed())
		g.Expect(job.Labels).To(HaveKeyWithValue(catalyst.BuildOwnerUIDLabel, string(got.UID)))
		g.Expect(job.Annotations).To(HaveKeyWithValue(catalyst.BuildCommitAnnotation, commit))
	}).Should(Succeed())
	Expect(job.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "platform-operator"))
	Expect(job.Spec.Template.Spec.Containers).To(HaveLen(1))
	Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElements(
		ContainSubstring("#"+commit), "--destination="+catalyst.ImageReference(t.project, commit)))
	return job
}

// playKaniko does what the build Job would: pushes commit's image to the registry, then marks the Job
// complete through its status subresource with the conditions a batch/v1 Job needs (SuccessCriteriaMet
// before Complete), as controllers/catalyst's envtest does; it returns the image's digest.
//
// Here kube-controller-manager's Job controller runs, and kwok may run the Job's pod, so the Job's status
// may already count it active or ready: a finished Job must have none (the API server refuses it
// otherwise), so they are zeroed in the same update. Once the Job is finished, the Job controller no
// longer changes its status (a finished Job is final); a conflict with one of its earlier writes is
// retried on the fresh object.
func (t catalystTeam) playKaniko(ctx context.Context, job *batchv1.Job, commit string) string {
	GinkgoHelper()
	digest, err := catalystRegistry.Push(catalyst.ImageReference(t.project, commit))
	Expect(err).NotTo(HaveOccurred())
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j := &batchv1.Job{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), j); err != nil {
			return err
		}
		now := metav1.Now()
		if j.Status.StartTime == nil {
			start := metav1.NewTime(now.Add(-time.Minute))
			j.Status.StartTime = &start
		}
		cond := func(c batchv1.JobConditionType) batchv1.JobCondition {
			return batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached,
				Message: "set by the test", LastProbeTime: now, LastTransitionTime: now}
		}
		j.Status.Active, j.Status.Succeeded, j.Status.CompletionTime = 0, 1, &now
		j.Status.Ready = ptr.To[int32](0)
		if j.Status.Terminating != nil {
			j.Status.Terminating = ptr.To[int32](0)
		}
		j.Status.UncountedTerminatedPods = nil
		j.Status.Conditions = append(slices.DeleteFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
			return c.Type == batchv1.JobSuccessCriteriaMet || c.Type == batchv1.JobComplete
		}), cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete))
		return k8s.Status().Update(ctx, j)
	})).To(Succeed())
	return digest
}

// deployedAt waits for env to be Ready on its current generation with commit built by job and deployed
// as digest, and returns it.
func (t catalystTeam) deployedAt(ctx context.Context, env *catalystv1.Environment, commit, jobName, digest string) *catalystv1.Environment {
	GinkgoHelper()
	var got *catalystv1.Environment
	Eventually(ctx, func(g Gomega) {
		var err error
		got, err = getEnvironment(ctx, env)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseReady), "conditions: %+v", got.Status.Conditions)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, catalystv1.ConditionReady)).To(BeTrue())
		g.Expect(got.Status.Deployment).NotTo(BeNil())
		g.Expect(got.Status.Deployment.Commit).To(Equal(commit))
	}).Should(Succeed())
	build := meta.FindStatusCondition(got.Status.Conditions, catalystv1.ConditionBuildReady)
	Expect(build).NotTo(BeNil())
	Expect(build.Status).To(Equal(metav1.ConditionTrue))
	Expect(build.Reason).To(Equal(catalystv1.ReasonImagePushed))
	Expect(got.Status.Build).NotTo(BeNil())
	Expect(got.Status.Build.JobName).To(Equal(jobName))
	Expect(got.Status.Build.CommitSHA).To(Equal(commit))
	Expect(got.Status.Build.Digest).To(Equal(digest))
	image := catalystRegistry.Host + "/" + catalyst.ImageRepository(t.project) + "@" + digest
	Expect(got.Status.Deployment.Image).To(Equal(image))
	Expect(meta.IsStatusConditionTrue(got.Status.Conditions, catalystv1.ConditionDeploymentReady)).To(BeTrue())
	return got
}

var _ = Describe("catalyst Environment", func() {
	It("catalyst: an Environment becomes Ready in a locked-down namespace, and deleting it removes the namespace and then the Environment", func(ctx SpecContext) {
		startOperator("catalyst", catalystOperator())
		t := newCatalystTeam(ctx)
		env := t.environment("pr-123")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		ns := environmentReady(ctx, env)
		Expect(ns).To(Equal(catalyst.NamespaceName(t.name, "web", "pr-123")))

		got, err := getEnvironment(ctx, env)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.URL).To(Equal("https://" + ns + ".preview.example.com"))
		Expect(got.Annotations).To(HaveKeyWithValue(catalystv1.AnnotationEnvironmentID, "env-pr-123"))

		By("the image was found in the registry, and the commit deployed with it")
		build := meta.FindStatusCondition(got.Status.Conditions, catalystv1.ConditionBuildReady)
		Expect(build).NotTo(BeNil())
		Expect(build.Status).To(Equal(metav1.ConditionTrue))
		Expect(build.Reason).To(Equal(catalystv1.ReasonImageExists))
		Expect(got.Status.Build).NotTo(BeNil())
		Expect(got.Status.Build.Digest).To(Equal(t.digest))
		Expect(got.Status.Build.JobName).To(BeEmpty(), "nothing to build")
		Expect(meta.IsStatusConditionTrue(got.Status.Conditions, catalystv1.ConditionDeploymentReady)).To(BeTrue(),
			"conditions: %+v", got.Status.Conditions)
		Expect(got.Status.Deployment).NotTo(BeNil())
		Expect(got.Status.Deployment.Commit).To(Equal(t.commit))
		Expect(got.Status.Deployment.Image).To(Equal(t.image()))
		var jobs batchv1.JobList
		Expect(k8s.List(ctx, &jobs, client.InNamespace(t.name))).To(Succeed())
		Expect(jobs.Items).To(BeEmpty(), "no build Job")
		d := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalysttest.AppDeployment}, d)).To(Succeed())
		Expect(d.Spec.Template.Spec.Containers).To(HaveLen(1))
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(t.image()))
		Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(1), "kwok runs its pod")

		By("the namespace carries the labels, the quota, the limits and the policy")
		n := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		Expect(n.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		Expect(n.Labels).To(HaveKeyWithValue(catalystv1.LabelBranch, "feature-login"))
		rq := &corev1.ResourceQuota{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.QuotaName}, rq)).To(Succeed())
		Expect(rq.Spec.Hard.Name(corev1.ResourceRequestsCPU, "").String()).To(Equal("1"))
		Expect(rq.Spec.Hard.Name(corev1.ResourceLimitsMemory, "").String()).To(Equal("2Gi"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.QuotaName}, &corev1.LimitRange{})).To(Succeed())
		np := &networkingv1.NetworkPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.NetworkPolicyName}, np)).To(Succeed())
		Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		ing := &networkingv1.Ingress{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.IngressName}, ing)).To(Succeed())
		Expect(ing.Spec.TLS).To(HaveLen(1))

		By("the environment's namespace deleted behind the operator's back: made anew once gone, the same commit deployed again (docs/backup.md: what needs no backup)")
		oldUID := n.UID
		Expect(k8s.Delete(ctx, n)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			again := &corev1.Namespace{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(oldUID), "still the deleted namespace")
			g.Expect(again.DeletionTimestamp).To(BeNil())
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(environmentReady(ctx, env)).To(Equal(ns))
		Eventually(ctx, func(g Gomega) {
			got, err := getEnvironment(ctx, env)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Deployment).NotTo(BeNil())
			g.Expect(got.Status.Deployment.Commit).To(Equal(t.commit))
			again := &appsv1.Deployment{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalysttest.AppDeployment}, again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(d.UID), "the workload was made anew in the new namespace")
			g.Expect(again.Spec.Template.Spec.Containers[0].Image).To(Equal(t.image()))
			g.Expect(again.Status.AvailableReplicas).To(BeEquivalentTo(1))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.QuotaName}, &corev1.ResourceQuota{})).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.NetworkPolicyName}, &networkingv1.NetworkPolicy{})).To(Succeed())

		By("deleting the Environment (background, as kubectl does)")
		Expect(k8s.Delete(ctx, env, client.PropagationPolicy("Background"))).To(Succeed())
		namespaceBeforeEnvironment(ctx, env, ns)
	})

	It("catalyst build: a PR Environment goes Pending → Building → Deploying → Ready; a new commit rebuilds and redeploys", func(ctx SpecContext) {
		startOperator("catalyst-build", catalystOperator())
		t := newCatalystBuildTeam(ctx)
		env := t.environment("pr-9")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		phases, stop := recordPhases(ctx, env)
		DeferCleanup(stop)

		By("the registry does not have the commit's image: a build Job for it, phase Building")
		job := t.awaitBuild(ctx, env, t.commit)
		got, err := getEnvironment(ctx, env)
		Expect(err).NotTo(HaveOccurred())
		ns := got.Status.Namespace
		Expect(ns).To(Equal(catalyst.NamespaceName(t.name, "web", "pr-9")))
		Expect(got.Status.Build.Image).To(BeEmpty(), "no image before the registry has it")
		markCertificateReady(ctx, ns, catalyst.CertificateName)

		By("playing Kaniko: the image is pushed and the Job completes; the commit is deployed with it")
		digest := t.playKaniko(ctx, job, t.commit)
		t.deployedAt(ctx, env, t.commit, job.Name, digest)
		d := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalysttest.AppDeployment}, d)).To(Succeed())
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(catalystRegistry.Host + "/" + t.name + "/web@" + digest))
		Expect(d.Spec.Template.Spec.Containers[0].Env).To(BeEmpty())
		// The recorder polls every 50 ms, so it may not have seen Ready yet when deployedAt has.
		var seen []catalystv1.Phase
		Eventually(ctx, func(g Gomega) {
			seen = phases.seen()
			g.Expect(seen).NotTo(BeEmpty())
			g.Expect(seen[len(seen)-1]).To(Equal(catalystv1.PhaseReady))
		}).Should(Succeed())
		GinkgoWriter.Printf("phases of the first build: %v\n", seen)
		// Pending and Deploying may each last less than one poll; Building waits for the test, so it is
		// always seen, and it comes before Ready (which is last).
		Expect(seen).To(ContainElement(catalystv1.PhaseBuilding))
		Expect(slices.Index(seen, catalystv1.PhaseBuilding)).To(BeNumerically("<", slices.Index(seen, catalystv1.PhaseReady)))
		Expect(seen).NotTo(ContainElement(catalystv1.PhaseFailed))
		for _, p := range seen[:slices.Index(seen, catalystv1.PhaseBuilding)] {
			Expect(p).To(Equal(catalystv1.PhasePending), "only Pending before Building: %v", seen)
		}

		By("a new commit that changes the Deployment: a new build Job, and the environment redeploys at it")
		files := catalysttest.AppFiles()
		app := files[catalysttest.AppPath+"/app.yaml"]
		changed := strings.Replace(app, "        ports:\n", "        env:\n        - {name: APP_REVISION, value: \"2\"}\n        ports:\n", 1)
		Expect(changed).NotTo(Equal(app), "the fixture changed: nothing to edit")
		files[catalysttest.AppPath+"/app.yaml"] = changed
		second, err := t.repo.Commit("web: an environment variable", files)
		Expect(err).NotTo(HaveOccurred())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			e, err := getEnvironment(ctx, env)
			if err != nil {
				return err
			}
			e.Spec.Source.CommitSHA = second
			return k8s.Update(ctx, e)
		})).To(Succeed())
		secondJob := t.awaitBuild(ctx, env, second)
		Expect(secondJob.Name).NotTo(Equal(job.Name))
		secondDigest := t.playKaniko(ctx, secondJob, second)
		Expect(secondDigest).NotTo(Equal(digest))
		t.deployedAt(ctx, env, second, secondJob.Name, secondDigest)
		Eventually(ctx, func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalysttest.AppDeployment}, d)).To(Succeed())
			c := d.Spec.Template.Spec.Containers[0]
			g.Expect(c.Image).To(Equal(catalystRegistry.Host + "/" + t.name + "/web@" + secondDigest))
			g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "APP_REVISION", Value: "2"}))
		}).Should(Succeed())

		By("deleting the Environment (background, as kubectl does)")
		stop()
		Expect(k8s.Delete(ctx, env, client.PropagationPolicy("Background"))).To(Succeed())
		namespaceBeforeEnvironment(ctx, env, ns)
	})

	It("catalyst deletion: deleting the Project first, or removing the labels, does not block deletion", func(ctx SpecContext) {
		startOperator("catalyst-deletion", catalystOperator())
		t := newCatalystTeam(ctx)
		unlabelled, viaProject := t.environment("unlabelled"), t.environment("via-project")
		Expect(k8s.Create(ctx, unlabelled)).To(Succeed())
		Expect(k8s.Create(ctx, viaProject)).To(Succeed())
		unlabelledNS, viaProjectNS := environmentReady(ctx, unlabelled), environmentReady(ctx, viaProject)

		By("removing the labels of one Environment, then deleting it")
		got, err := getEnvironment(ctx, unlabelled)
		Expect(err).NotTo(HaveOccurred())
		got.Labels = nil
		Expect(k8s.Update(ctx, got)).To(Succeed())
		Expect(k8s.Delete(ctx, got)).To(Succeed())
		namespaceBeforeEnvironment(ctx, unlabelled, unlabelledNS)

		By("deleting the Project: it deletes its Environment and waits for it")
		project := &catalystv1.Project{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: t.name, Name: "web"}, project)).To(Succeed())
		Expect(k8s.Delete(ctx, project)).To(Succeed())
		namespaceBeforeEnvironment(ctx, viaProject, viaProjectNS)
		Eventually(ctx, gone(ctx, project)).Should(Succeed())
	})

	It("catalyst webhook: the API server calls the operator's webhook, which refuses an Environment whose namespace another has", func(ctx SpecContext) {
		startOperator("catalyst-webhook", catalystOperator())
		t := newCatalystTeam(ctx)
		first := t.environment("pr-7")
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			got, err := getEnvironment(ctx, first)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Namespace).NotTo(BeEmpty())
		}).Should(Succeed())

		By("an Environment of another name, in another namespace, whose labels name the same namespace")
		other := newNamespace(ctx, nil)
		twin := catalysttest.Environment(other, "copy", t.name, "web")
		twin.Labels[catalystv1.LabelEnvironment] = "PR_7" // sanitized: pr-7
		err := k8s.Create(ctx, twin)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want the webhook's refusal, got %v", err)
		Expect(err.Error()).To(ContainSubstring("already belongs to Environment " + t.envNS + "/pr-7"))
		Expect(err.Error()).To(ContainSubstring(`admission webhook "venvironment.catalyst.catalyst.dev" denied the request`))

		By("one that names another namespace is admitted")
		twin.Labels[catalystv1.LabelEnvironment] = "pr-8"
		Expect(k8s.Create(ctx, twin)).To(Succeed())
	})

	It("catalyst safety: a pre-existing namespace is never touched", func(ctx SpecContext) {
		startOperator("catalyst-safety", catalystOperator())
		t := newCatalystTeam(ctx)
		theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: catalyst.NamespaceName(t.name, "web", "taken"), Labels: map[string]string{"owner": "someone-else"}}}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		DeferCleanup(func() {
			cctx, cancel := suiteContext()
			defer cancel()
			Expect(client.IgnoreNotFound(k8s.Delete(cctx, theirs))).To(Succeed())
		})
		env := t.environment("taken")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			got, err := getEnvironment(ctx, env)
			g.Expect(err).NotTo(HaveOccurred())
			c := meta.FindStatusCondition(got.Status.Conditions, catalystv1.ConditionNamespaceReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonNamespaceConflict))
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseFailed))
		}).Should(Succeed())

		untouched := func(g Gomega) {
			n := &corev1.Namespace{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), n)).To(Succeed())
			g.Expect(n.ResourceVersion).To(Equal(theirs.ResourceVersion), "the namespace was changed")
			g.Expect(n.DeletionTimestamp).To(BeNil())
		}
		Consistently(ctx, untouched).Should(Succeed())
		Expect(k8s.Delete(ctx, env)).To(Succeed())
		Eventually(ctx, gone(ctx, env)).Should(Succeed())
		Consistently(ctx, untouched).Should(Succeed())
		var objs corev1.ResourceQuotaList
		Expect(k8s.List(ctx, &objs, client.InNamespace(theirs.Name))).To(Succeed())
		Expect(objs.Items).To(BeEmpty(), fmt.Sprintf("nothing was made in %s", theirs.Name))
	})
})
