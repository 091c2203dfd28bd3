package catalyst

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// Specs of references across namespaces (tenants are hostile: a reference they write must not reach
// another team's Project uninvited), expiring previews, protected deployments, and a webhook that is down.

// newNamespace makes a namespace of a fresh name with prefix (testenv.CreateNamespace).
func newNamespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	name, err := testenv.CreateNamespace(ctx, k8s, prefix)
	Expect(err).NotTo(HaveOccurred())
	return name
}

// eventCount is how many times obj (an Environment or a Project) got an event of type and reason whose
// message is msg ("": any), the recorder's repetitions of one event counted.
func eventCount(ctx context.Context, obj client.Object, typ, reason, msg string) func() int32 {
	return func() int32 {
		var n int32
		for _, e := range eventsOf(ctx, obj, typ, reason) {
			if msg == "" || e.Message == msg {
				n += max(e.Count, 1)
			}
		}
		return n
	}
}

// updateEnv changes env, retrying when a controller's write got in between.
func updateEnv(ctx context.Context, env *catalystv1.Environment, change func(*catalystv1.Environment)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := getEnv(ctx, env)
		change(got)
		return k8s.Update(ctx, got)
	})).To(Succeed())
}

// waitForNamespace waits until env has its namespace and returns it.
func waitForNamespace(ctx context.Context, env *catalystv1.Environment) string {
	GinkgoHelper()
	var ns string
	Eventually(func(g Gomega) {
		ns = getEnv(ctx, env).Status.Namespace
		g.Expect(ns).NotTo(BeEmpty())
	}).Should(Succeed())
	return ns
}

// secretsOf are the names of the Secrets a Job's pods read (volumes, env and envFrom), each once.
func secretsOf(job *batchv1.Job) []string {
	var out []string
	spec := job.Spec.Template.Spec
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			out = append(out, v.Secret.SecretName)
		}
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				out = append(out, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				out = append(out, e.SecretRef.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var _ = Describe("Environment project references", func() {
	It("refuses at admission a Project of another namespace that does not allow the Environment's (or does not exist), and admits it once listed", func(ctx SpecContext) {
		t := newTeam(ctx)
		other := newNamespace(ctx, "o")
		env := catalysttest.Environment(other, "pr-1", t.name, "web")
		env.Spec.ProjectRef.Namespace = t.projectNS

		err := k8s.Create(ctx, env.DeepCopy())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(
			"spec.projectRef.namespace: Forbidden: Project %s/web does not allow Environments of namespace %s (spec.allowedEnvironmentNamespaces)",
			t.projectNS, other)))

		missing := env.DeepCopy()
		missing.Spec.ProjectRef.Name = "nothing"
		err = k8s.Create(ctx, missing)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("Project %s/nothing does not allow Environments of namespace %s", t.projectNS, other)),
			"a missing Project is refused the same way: no probing for another namespace's Projects")

		By("the same reference, once the Project lists the namespace")
		t.updateProject(ctx, func(p *catalystv1.Project) {
			p.Spec.AllowedEnvironmentNamespaces = append(p.Spec.AllowedEnvironmentNamespaces, other)
		})
		Eventually(func() error { return k8s.Create(ctx, env.DeepCopy()) }).Should(Succeed(), "the webhook's cache sees the list")
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionNamespaceReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(got.Status.Namespace).To(Equal(t.namespaceOf("pr-1")))
		}).Should(Succeed())
	})

	It("stops building for an Environment whose Project takes its allowance back, keeping its namespace, and refuses another team's Project in the controller", func(ctx SpecContext) {
		t := buildTeam(ctx)
		env, commit := t.createAtNewCommit(ctx, "pr-1")
		theBuildJob(ctx, t, env, commit) // allowed: built in the Project's namespace
		ns := waitForNamespace(ctx, env)

		By("the Project removes the Environment's namespace from its list")
		t.updateProject(ctx, func(p *catalystv1.Project) { p.Spec.AllowedEnvironmentNamespaces = nil })
		want := fmt.Sprintf("Project %s/web does not allow Environments of namespace %s (spec.allowedEnvironmentNamespaces)", t.projectNS, t.envNS)
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			c := condition(g, got, catalystv1.ConditionNamespaceReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonProjectNotAllowed))
			g.Expect(c.Message).To(Equal(want))
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseFailed))
			g.Expect(got.Status.Namespace).To(Equal(ns), "the namespace is kept")
			g.Expect(condition(g, got, catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonWaiting))
		}).Should(Succeed())
		Eventually(eventCount(ctx, env, corev1.EventTypeWarning, catalystv1.ReasonProjectNotAllowed, want)).Should(BeEquivalentTo(1))
		n := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		Expect(n.DeletionTimestamp).To(BeNil())
		Eventually(func(g Gomega) int32 {
			p := &catalystv1.Project{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: t.projectNS, Name: "web"}, p)).To(Succeed())
			return p.Status.Environments
		}).Should(BeZero(), "an Environment the Project does not allow is not counted")

		By("a new commit is admitted (the Environment has its namespace) and builds nothing in the Project's namespace")
		second := commitSHA()
		setCommit(ctx, env, second)
		Consistently(func(g Gomega) {
			for _, j := range buildJobs(ctx, g, t, env) {
				g.Expect(j.Annotations[catalyst.BuildCommitAnnotation]).NotTo(Equal(second))
			}
		}).Should(Succeed())

		By("pointed at another team's Project, past the webhook (it has its namespace), it is refused by the controller")
		t2 := newTeam(ctx)
		updateEnv(ctx, env, func(e *catalystv1.Environment) { e.Spec.ProjectRef.Namespace = t2.projectNS })
		expectCondition(ctx, env, catalystv1.ConditionNamespaceReady, catalystv1.ReasonProjectNotAllowed, "Project "+t2.projectNS+"/web does not allow")
		Consistently(func(g Gomega) {
			var jobs batchv1.JobList
			g.Expect(k8s.List(ctx, &jobs, client.InNamespace(t2.projectNS))).To(Succeed())
			g.Expect(jobs.Items).To(BeEmpty(), "nothing is built in the other team's namespace")
		}).Should(Succeed())

		By("back at its Project, listed again, it builds: the Project's change wakes it")
		updateEnv(ctx, env, func(e *catalystv1.Environment) { e.Spec.ProjectRef.Namespace = t.projectNS })
		t.updateProject(ctx, func(p *catalystv1.Project) { p.Spec.AllowedEnvironmentNamespaces = []string{t.envNS} })
		theBuildJob(ctx, t, env, second)
	})

	It("looks the Project up in the Environment's own namespace when projectRef.namespace is empty, whatever team the label names", func(ctx SpecContext) {
		t := newTeam(ctx)
		other := newNamespace(ctx, "o")
		// The team label names t's team, whose namespace holds Project web.
		env := catalysttest.Environment(other, "pr-1", t.name, "web")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		expectCondition(ctx, env, catalystv1.ConditionNamespaceReady, catalystv1.ReasonProjectNotFound, "does not exist in namespace "+other)
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: t.namespaceOf("pr-1")}, &corev1.Namespace{}))
		}).Should(BeTrue(), "nothing is made with the other team's Project")

		By("a Project of that name in its own namespace: the team label still names the namespace's first part")
		Expect(k8s.Create(ctx, catalysttest.Project(other, "web"))).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getEnv(ctx, env).Status.Namespace).To(Equal(t.namespaceOf("pr-1"))) }).Should(Succeed())
	})

	It("reads a Secret only in the namespace of the object that names it", func(ctx SpecContext) {
		t := newTeam(ctx)
		// The Project names its registry and git Secrets; only the Environment's namespace has them.
		Expect(k8s.Create(ctx, testRegistry.Secret(t.envNS, registrySecret))).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.envNS, Name: gitSecret},
			StringData: map[string]string{"token": "the-environment-namespace-token"}})).To(Succeed())
		t.updateProject(ctx, func(p *catalystv1.Project) {
			p.Spec.Build = &catalystv1.ProjectBuild{Registry: testRegistry.Host, RegistrySecretRef: &catalystv1.LocalObjectReference{Name: registrySecret}}
			p.Spec.Source.SecretRef = &catalystv1.LocalObjectReference{Name: gitSecret}
		})
		// The Environment names a Secret for an env var; the Project's namespace has one of that name.
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.projectNS, Name: "stolen"},
			StringData: map[string]string{"token": "the-project-namespace-token"}})).To(Succeed())
		commit := commitSHA()
		env := t.environment("pr-1")
		env.Spec.Source.CommitSHA = commit
		env.Spec.Config.EnvVars = append(env.Spec.Config.EnvVars,
			catalystv1.EnvVar{Name: "STOLEN", SecretKeyRef: &catalystv1.SecretKeySelector{Name: "stolen", Key: "token"}})
		Expect(k8s.Create(ctx, env)).To(Succeed())

		Eventually(func(g Gomega) {
			c := condition(g, getEnv(ctx, env), catalystv1.ConditionBuildReady)
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonSecretInvalid))
			g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("Secret %s/%s", t.projectNS, registrySecret)))
		}).Should(Succeed(), "the Environment's namespace's Secret of that name is not read")
		Consistently(func(g Gomega) { g.Expect(buildJobs(ctx, g, t, env)).To(BeEmpty()) }).Should(Succeed())

		By("the Secrets appear where the Project names them")
		Expect(k8s.Create(ctx, testRegistry.Secret(t.projectNS, registrySecret))).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.projectNS, Name: gitSecret},
			StringData: map[string]string{"token": "not-a-real-token"}})).To(Succeed())
		nudge(ctx, env)
		job := theBuildJob(ctx, t, env, commit)
		Expect(job.Namespace).To(Equal(t.projectNS))
		Expect(secretsOf(job)).To(ConsistOf(registrySecret, gitSecret),
			"the build reads only the Secrets its Project names, never one the Environment named")
	})
})

var _ = Describe("Previews and production", func() {
	It("deletes a preview spec.expireAfter after its last change, by the operator's clock", func(ctx SpecContext) {
		t := newTeam(ctx)
		env := t.environment("pr-1")
		env.Spec.ExpireAfter = &metav1.Duration{Duration: time.Hour}
		start := testClock.Now()
		Expect(k8s.Create(ctx, env)).To(Succeed())
		var first time.Time
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.ExpiresAt).NotTo(BeNil())
			first = got.Status.ExpiresAt.Time
		}).Should(Succeed())
		Expect(first).To(BeTemporally("~", start.Add(time.Hour), 5*time.Second))
		ns := waitForNamespace(ctx, env)

		By("a label change does not extend it")
		nudge(ctx, env)
		Consistently(func() time.Time { return getEnv(ctx, env).Status.ExpiresAt.Time }).Should(BeTemporally("==", first))

		By("a change of its spec does")
		testClock.Advance(30 * time.Minute)
		updateEnv(ctx, env, func(e *catalystv1.Environment) { e.Spec.Config.EnvVars[0].Value = "false" })
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally("~", first.Add(30*time.Minute), 5*time.Second))
		}).Should(Succeed())
		Expect(eventCount(ctx, env, corev1.EventTypeNormal, catalystv1.EventExpired, "")()).To(BeZero())

		By("once it has passed, the operator deletes the Environment, and its namespace with it")
		testClock.Advance(2 * time.Hour)
		nudge(ctx, env) // the requeue is set for real time; the moved clock needs a reconcile now
		Eventually(eventCount(ctx, env, corev1.EventTypeNormal, catalystv1.EventExpired, "")).Should(BeEquivalentTo(1))
		Eventually(func(g Gomega) {
			n := &corev1.Namespace{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
			g.Expect(n.DeletionTimestamp).NotTo(BeNil())
		}).Should(Succeed())
		finalizeNamespace(ctx, ns)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(env), &catalystv1.Environment{}))
		}).Should(BeTrue())
	})

	It("refuses to delete a deployment Environment without catalyst.dev/allow-deletion, and a deleted Project waits for it, naming it", func(ctx SpecContext) {
		t := newTeam(ctx)
		prod := t.environment("prod")
		prod.Spec.Type = catalystv1.EnvironmentDeployment
		preview := t.environment("pr-1")
		Expect(k8s.Create(ctx, prod)).To(Succeed())
		Expect(k8s.Create(ctx, preview)).To(Succeed())
		prodNS, previewNS := waitForNamespace(ctx, prod), waitForNamespace(ctx, preview)

		err := k8s.Delete(ctx, prod)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring(`set the annotation catalyst.dev/allow-deletion: "true" on it`))

		By("the Project is deleted: the preview goes, production stays and is named")
		key := client.ObjectKey{Namespace: t.projectNS, Name: "web"}
		Expect(k8s.Delete(ctx, &catalystv1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getEnv(ctx, preview).DeletionTimestamp).NotTo(BeNil()) }).Should(Succeed())
		finalizeNamespace(ctx, previewNS)
		p := &catalystv1.Project{}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, p)).To(Succeed())
			c := meta.FindStatusCondition(p.Status.Conditions, catalystv1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonDeleting))
			g.Expect(c.Message).To(ContainSubstring("protected from deletion"))
			g.Expect(c.Message).To(ContainSubstring(prod.Namespace + "/prod"))
			g.Expect(c.Message).NotTo(ContainSubstring("/pr-1"), "the preview is gone")
		}).Should(Succeed())
		Eventually(eventCount(ctx, p, corev1.EventTypeWarning, catalystv1.EventEnvironmentsProtected, "")).ShouldNot(BeZero())
		Consistently(func(g Gomega) { g.Expect(getEnv(ctx, prod).DeletionTimestamp).To(BeNil()) }).Should(Succeed())

		By("the annotation releases it: the Project deletes it and goes")
		updateEnv(ctx, prod, func(e *catalystv1.Environment) { e.Annotations[catalystv1.AnnotationAllowDeletion] = "true" })
		Eventually(func(g Gomega) { g.Expect(getEnv(ctx, prod).DeletionTimestamp).NotTo(BeNil()) }).Should(Succeed())
		finalizeNamespace(ctx, prodNS)
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, key, &catalystv1.Project{})) }).Should(BeTrue())
	})

	It("with the webhook down, deletes a preview and lets a deleted Environment's finalizer be removed, but still protects production", func(ctx SpecContext) {
		t := newTeam(ctx)
		preview := t.environment("pr-1")
		prod := t.environment("prod")
		prod.Spec.Type = catalystv1.EnvironmentDeployment
		Expect(k8s.Create(ctx, preview)).To(Succeed())
		Expect(k8s.Create(ctx, prod)).To(Succeed())
		waitForNamespace(ctx, preview)
		waitForNamespace(ctx, prod)

		By("the webhook stops answering for the team's namespace")
		downWebhook(ctx, t.envNS)
		Eventually(func() error {
			return k8s.Create(ctx, t.environment("pr-"+rand.String(4)))
		}).Should(MatchError(ContainSubstring("failed calling webhook")), "a control: a creation is refused, the webhook is called and down")

		By("a preview is deleted, and its finalizer removed by hand (the escape hatch)")
		Expect(k8s.Delete(ctx, preview)).To(Succeed())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := getEnv(ctx, preview)
			base := got.DeepCopy()
			got.Finalizers = nil
			return k8s.Patch(ctx, got, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(preview), &catalystv1.Environment{}))
		}).Should(BeTrue())

		By("production is not deleted while the webhook cannot say yes")
		// Both configurations match this deletion and the API server calls them in parallel: the refusal it
		// returns is the down copy's ("failed calling webhook") or the running one's ("protected from
		// deletion"), whichever comes first. Either way nothing is deleted; the creation above shows the
		// down copy refuses on its own.
		Expect(k8s.Delete(ctx, prod)).To(MatchError(Or(ContainSubstring("failed calling webhook"), ContainSubstring("protected from deletion"))))
		Expect(getEnv(ctx, prod).DeletionTimestamp).To(BeNil())

		By("with the annotation it is (an update of an Environment that has its namespace does not call the webhook)")
		updateEnv(ctx, prod, func(e *catalystv1.Environment) { e.Annotations[catalystv1.AnnotationAllowDeletion] = "true" })
		Expect(k8s.Delete(ctx, prod)).To(Succeed())
	})
})

// downWebhook installs, until the spec ends, a copy of the Environment webhook configuration the suite
// installed (config/webhook's kustomize output, matchConditions included) whose webhooks call a closed
// port on 127.0.0.1, for Environments of namespace only: as if the operator were down.
func downWebhook(ctx context.Context, namespace string) {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	installed := testEnv.WebhookInstallOptions.ValidatingWebhooks
	Expect(installed).To(HaveLen(1))
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "down-" + namespace},
		Webhooks:   installed[0].DeepCopy().Webhooks,
	}
	Expect(cfg.Webhooks).To(ContainElement(HaveField("MatchConditions", Not(BeEmpty()))), "the shipped matchConditions are installed")
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		Expect(w.ClientConfig.URL).NotTo(BeNil())
		u, err := url.Parse(*w.ClientConfig.URL)
		Expect(err).NotTo(HaveOccurred())
		u.Host = addr
		w.ClientConfig.URL = ptr.To(u.String())
		w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}}
		w.TimeoutSeconds = ptr.To(int32(2))
	}
	Expect(k8s.Create(ctx, cfg)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, cfg))).To(Succeed()) })
}
