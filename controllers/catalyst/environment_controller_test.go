package catalyst

import (
	"context"
	"fmt"
	"strings"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/catalyst/render/rendertest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/testutil/standin"
)

// team is one spec's team: its namespace holds the Project, a second namespace the Environments, which
// the Project allows (spec.allowedEnvironmentNamespaces) and which name it with spec.projectRef.namespace.
type team struct {
	name, projectNS, envNS string
}

// newTeam makes a team of a fresh name with its Project "web", and the namespace its Environments live in.
func newTeam(ctx context.Context) team {
	GinkgoHelper()
	t := team{name: "t" + rand.String(6)}
	t.projectNS = t.name
	t.envNS = t.name + "-web"
	for _, ns := range []string{t.projectNS, t.envNS} {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	Expect(k8s.Create(ctx, t.project("web"))).To(Succeed())
	return t
}

// project is a Project of the team, in its namespace, allowing the team's Environment namespace.
func (t team) project(name string) *catalystv1.Project {
	p := catalysttest.Project(t.projectNS, name)
	p.Spec.AllowedEnvironmentNamespaces = []string{t.envNS}
	return p
}

func (t team) environment(name string) *catalystv1.Environment {
	env := catalysttest.Environment(t.envNS, name, t.name, "web")
	env.Spec.ProjectRef.Namespace = t.projectNS
	return env
}

// namespaceOf is the namespace an environment of the team gets.
func (t team) namespaceOf(env string) string { return t.name + "-web-" + env }

func getEnv(ctx context.Context, env *catalystv1.Environment) *catalystv1.Environment {
	GinkgoHelper()
	got := &catalystv1.Environment{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(env), got)).To(Succeed())
	return got
}

// expectCondition waits until env's condition of type condType has reason and a message containing msg.
func expectCondition(ctx context.Context, env *catalystv1.Environment, condType, reason, msg string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := condition(g, getEnv(ctx, env), condType)
		g.Expect(c.Reason).To(Equal(reason))
		g.Expect(c.Message).To(ContainSubstring(msg))
	}).Should(Succeed())
}

// condition returns the environment's condition of type t, failing the Gomega g when absent.
func condition(g Gomega, env *catalystv1.Environment, t string) metav1.Condition {
	c := meta.FindStatusCondition(env.Status.Conditions, t)
	g.Expect(c).NotTo(BeNil(), "no %s condition yet: %+v", t, env.Status.Conditions)
	return *c
}

// finalizeNamespace plays the namespace controller, which envtest does not run: a deleted namespace is
// emptied (here: nothing to empty) and its finalizer removed, so it goes.
func finalizeNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		ns, err := clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ns.DeletionTimestamp).NotTo(BeNil(), "namespace %s is not being deleted", name)
		ns.Spec.Finalizers = nil
		_, err = clientset.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	}).Should(Succeed())
}

// eventsOf lists the events of type typ and reason about obj (an Environment or a Project).
func eventsOf(ctx context.Context, obj client.Object, typ, reason string) []corev1.Event {
	kind := "Environment"
	if _, ok := obj.(*catalystv1.Project); ok {
		kind = "Project"
	}
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == obj.GetName() && e.InvolvedObject.Kind == kind && e.Type == typ && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// eventMessages lists the messages of env's events of type typ and reason.
func eventMessages(ctx context.Context, env *catalystv1.Environment, typ, reason string) func() []string {
	return func() []string {
		var out []string
		for _, e := range eventsOf(ctx, env, typ, reason) {
			out = append(out, e.Message)
		}
		return out
	}
}

// warningEvents lists env's Warning events of reason.
func warningEvents(ctx context.Context, env *catalystv1.Environment, reason string) func() []string {
	return eventMessages(ctx, env, corev1.EventTypeWarning, reason)
}

var _ = Describe("Environment", func() {
	It("gets a locked-down namespace and an https Ingress, is Ready with its URL once the certificate is issued, and costs no write when unchanged", func(ctx SpecContext) {
		t, _, commit := deployTeam(ctx, catalystv1.DeploymentManifest, "deploy", rendertest.Manifests())
		env := t.environment("pr-123")
		env.Spec.Source.CommitSHA = commit
		Expect(k8s.Create(ctx, env)).To(Succeed())
		ns := t.namespaceOf("pr-123")

		By("the namespace, its lockdown and the ingress")
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(got.Finalizers).To(ContainElement(catalystv1.Finalizer))
			g.Expect(got.Status.Namespace).To(Equal(ns))
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseDeploying))
			g.Expect(condition(g, got, catalystv1.ConditionNamespaceReady).Status).To(Equal(metav1.ConditionTrue))
			ing := condition(g, got, catalystv1.ConditionIngressReady)
			g.Expect(ing.Reason).To(Equal(catalystv1.ReasonCertificatePending))
			g.Expect(got.Status.URL).To(BeEmpty(), "no URL before the certificate is issued")
		}).Should(Succeed())

		n := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		Expect(n.Labels).To(HaveKeyWithValue(catalystv1.LabelTeam, t.name))
		Expect(n.Labels).To(HaveKeyWithValue(catalystv1.LabelProject, "web"))
		Expect(n.Labels).To(HaveKeyWithValue(catalystv1.LabelEnvironment, "pr-123"))
		Expect(n.Labels).To(HaveKeyWithValue(catalystv1.LabelBranch, "feature-login"))
		Expect(n.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		Expect(n.Labels).To(HaveKeyWithValue(oplabels.ManagedByLabel, oplabels.OperatorName))
		Expect(n.Annotations).To(HaveKeyWithValue(catalystv1.AnnotationBranch, "feature/login"))
		Expect(n.Annotations).To(HaveKeyWithValue(catalystv1.AnnotationPRNumber, "123"))
		Expect(n.Annotations).To(HaveKeyWithValue(catalyst.OwnerUIDAnnotation, string(getEnv(ctx, env).UID)))

		rq := &corev1.ResourceQuota{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.QuotaName}, rq)).To(Succeed())
		Expect(rq.Spec.Hard.Name(corev1.ResourceLimitsMemory, "").String()).To(Equal("2Gi"), "the Project's defaultQuota")
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.QuotaName}, &corev1.LimitRange{})).To(Succeed())
		np := &networkingv1.NetworkPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.NetworkPolicyName}, np)).To(Succeed())
		Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		ing := &networkingv1.Ingress{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.IngressName}, ing)).To(Succeed())
		host := ns + ".preview.example.com"
		Expect(ing.Spec.Rules[0].Host).To(Equal(host), "the host is the namespace under the Project's domain")
		cert := &cmv1.Certificate{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.CertificateName}, cert)).To(Succeed())
		Expect(cert.Spec.IssuerRef.Name).To(Equal(catalysttest.Issuer))

		By("cert-manager issues the certificate, and the application is available")
		Expect(catalysttest.MarkCertificateReady(ctx, k8s, ns, catalyst.CertificateName)).To(Succeed())
		webContainer(ctx, ns)
		Expect(standin.MarkDeploymentAvailable(ctx, k8s, ns, rendertest.Deployment)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseReady))
			g.Expect(got.Status.URL).To(Equal("https://" + host))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(condition(g, got, catalystv1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			build := condition(g, got, catalystv1.ConditionBuildReady)
			g.Expect(build.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(build.Reason).To(Equal(catalystv1.ReasonImageExists))
			g.Expect(condition(g, got, catalystv1.ConditionDeploymentReady).Status).To(Equal(metav1.ConditionTrue))
		}).Should(Succeed())
		Expect(getEnv(ctx, env).Annotations).To(HaveKeyWithValue(catalystv1.AnnotationEnvironmentID, "env-pr-123"))
		Eventually(eventCount(ctx, env, corev1.EventTypeNormal, catalystv1.EventReady, "Environment is ready at https://"+host)).Should(BeEquivalentTo(1))

		By("an unchanged environment, and its Project, cost no write, even when woken")
		// Touching the Environment wakes both reconcilers: the Environment's, and its Project's.
		Eventually(func(g Gomega) {
			before := writes.In(t.envNS, ns, t.projectNS)
			touch(ctx, env)
			g.Consistently(func() int { return writes.In(t.envNS, ns, t.projectNS) - before }).WithTimeout(time.Second).Should(BeZero())
		}).Should(Succeed())
		Expect(writes.In(t.envNS, ns)).To(BeNumerically(">=", 8), "creating the environment's children must have been counted here")
		Expect(writes.In(t.projectNS)).To(BeNumerically(">=", 2), "the Project's finalizer and status must have been counted here")
		Expect(eventCount(ctx, env, corev1.EventTypeNormal, catalystv1.EventReady, "")()).To(BeEquivalentTo(1),
			"Ready is announced once per generation and URL, not on every reconcile")
	})

	It("repairs the children it caches as metadata only when they are edited or deleted by hand", func(ctx SpecContext) {
		t := newTeam(ctx)
		env := t.environment("handedit")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		ns := t.namespaceOf("handedit")
		np := &networkingv1.NetworkPolicy{}
		rb := &rbacv1.RoleBinding{}
		Eventually(func(g Gomega) {
			g.Expect(condition(g, getEnv(ctx, env), catalystv1.ConditionNamespaceReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.NetworkPolicyName}, np)).To(Succeed())
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.TenantServiceAccountName}, rb)).To(Succeed())
		}).Should(Succeed())
		want := np.Spec.DeepCopy()

		By("a NetworkPolicy opened by hand, and the tenant's RoleBinding bound to another subject")
		np.Spec = networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}
		Expect(k8s.Update(ctx, np, client.FieldOwner("kubectl-edit"))).To(Succeed())
		rb.Subjects[0].Name = "intruder"
		Expect(k8s.Update(ctx, rb, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Eventually(func(g Gomega) {
			got := &networkingv1.NetworkPolicy{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(np), got)).To(Succeed())
			g.Expect(got.Spec).To(Equal(*want))
			gotRB := &rbacv1.RoleBinding{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), gotRB)).To(Succeed())
			g.Expect(gotRB.Subjects[0].Name).To(Equal(catalyst.TenantServiceAccountName))
		}).Should(Succeed())

		By("the Ingress deleted by hand")
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: catalyst.IngressName}}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ing), ing)).To(Succeed())
		uid := ing.UID
		Expect(k8s.Delete(ctx, ing)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &networkingv1.Ingress{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ing), got)).To(Succeed())
			g.Expect(got.UID).NotTo(Equal(uid))
		}).Should(Succeed())
	})

	It("never adopts a namespace it did not make: NamespaceConflict, a Warning event, and deletion leaves it alone", func(ctx SpecContext) {
		t := newTeam(ctx)
		ns := t.namespaceOf("taken")
		theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"owner": "someone"}}}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		env := t.environment("taken")
		Expect(k8s.Create(ctx, env)).To(Succeed())

		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			c := condition(g, got, catalystv1.ConditionNamespaceReady)
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonNamespaceConflict))
			g.Expect(c.Message).To(ContainSubstring("was not made by the operator"))
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseFailed))
			g.Expect(got.Status.Namespace).To(BeEmpty())
		}).Should(Succeed())
		Eventually(warningEvents(ctx, env, catalystv1.ReasonNamespaceConflict)).ShouldNot(BeEmpty())
		untouched := func(g Gomega) {
			n := &corev1.Namespace{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
			g.Expect(n.ResourceVersion).To(Equal(theirs.ResourceVersion))
			g.Expect(n.DeletionTimestamp).To(BeNil())
			var quotas corev1.ResourceQuotaList
			g.Expect(k8s.List(ctx, &quotas, client.InNamespace(ns))).To(Succeed())
			g.Expect(quotas.Items).To(BeEmpty())
		}
		Consistently(untouched).Should(Succeed())

		By("deleting the environment releases it without touching the namespace")
		Expect(k8s.Delete(ctx, env)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(env), env)) }).Should(BeTrue())
		Consistently(untouched).Should(Succeed())
	})

	It("refuses, in the controller, a namespace the operator made for another Environment (the webhook's race)", func(ctx SpecContext) {
		t := newTeam(ctx)
		ns := t.namespaceOf("twin")
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels:      map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName},
			Annotations: map[string]string{catalyst.OwnerAnnotation: "elsewhere/twin", catalyst.OwnerUIDAnnotation: "another-uid"}}}
		Expect(k8s.Create(ctx, other)).To(Succeed())
		env := t.environment("twin")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		expectCondition(ctx, env, catalystv1.ConditionNamespaceReady, catalystv1.ReasonNamespaceConflict, "Environment elsewhere/twin (uid another-uid)")
		Expect(k8s.Delete(ctx, env)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(env), env)) }).Should(BeTrue())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed())
		Expect(other.DeletionTimestamp).To(BeNil())
	})

	It("waits for a missing Project without retrying, and goes on once it exists", func(ctx SpecContext) {
		t := newTeam(ctx)
		// No spec.projectRef.namespace: the Project is looked up in the Environment's own namespace.
		env := catalysttest.Environment(t.envNS, "pr-1", t.name, "api")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionNamespaceReady).Reason).To(Equal(catalystv1.ReasonProjectNotFound))
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseFailed))
		}).Should(Succeed())
		Eventually(warningEvents(ctx, env, catalystv1.ReasonProjectNotFound)).ShouldNot(BeEmpty())
		before := writes.In(t.envNS)
		Consistently(func() int { return writes.In(t.envNS) - before }).Should(BeZero(), "no hot retry loop")

		Expect(k8s.Create(ctx, catalysttest.Project(t.envNS, "api"))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getEnv(ctx, env).Status.Namespace).To(Equal(t.name + "-api-pr-1"))
		}).Should(Succeed())
	})

	It("keeps its namespace, untouched, when its Project goes missing", func(ctx SpecContext) {
		t := newTeam(ctx)
		env := t.environment("orphan")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		ns := t.namespaceOf("orphan")
		Eventually(func(g Gomega) { g.Expect(getEnv(ctx, env).Status.Namespace).To(Equal(ns)) }).Should(Succeed())

		got := getEnv(ctx, env)
		got.Spec.ProjectRef.Name = "gone"
		Expect(k8s.Update(ctx, got)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			// In another namespace, a missing Project is not told apart from one that does not allow it.
			g.Expect(condition(g, got, catalystv1.ConditionNamespaceReady).Reason).To(Equal(catalystv1.ReasonProjectNotAllowed))
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseFailed))
			g.Expect(got.Status.URL).To(BeEmpty())
			g.Expect(got.Status.Namespace).To(Equal(ns), "the namespace is still the environment's")
		}).Should(Succeed())
		n := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		Expect(n.DeletionTimestamp).To(BeNil())
	})

	It("deletes its namespace with it and is released only once the namespace is gone, labels removed or not", func(ctx SpecContext) {
		t := newTeam(ctx)
		for _, removeLabels := range []bool{false, true} {
			name := fmt.Sprintf("del-%t", removeLabels)
			env := t.environment(name)
			Expect(k8s.Create(ctx, env)).To(Succeed())
			ns := t.namespaceOf(name)
			Eventually(func(g Gomega) { g.Expect(getEnv(ctx, env).Status.Namespace).To(Equal(ns)) }).Should(Succeed())
			if removeLabels {
				got := getEnv(ctx, env)
				got.Labels = nil
				Expect(k8s.Update(ctx, got)).To(Succeed())
			}
			Expect(k8s.Delete(ctx, env)).To(Succeed())
			Eventually(func(g Gomega) {
				n := &corev1.Namespace{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
				g.Expect(n.DeletionTimestamp).NotTo(BeNil())
			}).Should(Succeed())
			Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(env), &catalystv1.Environment{}) }).
				Should(Succeed(), "the Environment stays until its namespace is gone")
			finalizeNamespace(ctx, ns)
			Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(env), env)) }).Should(BeTrue())
		}
	})

	It("the webhook refuses an Environment whose namespace another Environment has, and a reserved one", func(ctx SpecContext) {
		t := newTeam(ctx)
		first := t.environment("dup")
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getEnv(ctx, first).Status.Namespace).NotTo(BeEmpty()) }).Should(Succeed())

		// Same team, project and environment labels, from another namespace and with another name.
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.name + "-other"}})).To(Succeed())
		twin := catalysttest.Environment(t.name+"-other", "dup-2", t.name, "web")
		twin.Labels[catalystv1.LabelEnvironment] = "dup"
		err := k8s.Create(ctx, twin)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("already belongs to Environment " + first.Namespace + "/dup"))

		// A name that differs only in what sanitizing removes collapses to the same namespace.
		twin = catalysttest.Environment(t.envNS, "dup-3", strings.ToUpper(t.name)+"!", "web")
		twin.Labels[catalystv1.LabelEnvironment] = "DUP"
		err = k8s.Create(ctx, twin)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)

		reserved := catalysttest.Environment(t.envNS, "system", "kube", "")
		reserved.Labels[catalystv1.LabelProject] = "system"
		reserved.Labels[catalystv1.LabelEnvironment] = "" // falls back to the name: kube-system-system
		reserved.Spec.ProjectRef.Name = "system"
		err = k8s.Create(ctx, reserved)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("reserved"))
	})
})

var _ = Describe("Project", func() {
	It("counts its Environments and, when deleted, deletes them and waits for them", func(ctx SpecContext) {
		t := newTeam(ctx)
		envs := []*catalystv1.Environment{t.environment("a"), t.environment("b")}
		for _, e := range envs {
			Expect(k8s.Create(ctx, e)).To(Succeed())
		}
		p := &catalystv1.Project{}
		key := client.ObjectKey{Namespace: t.projectNS, Name: "web"}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, p)).To(Succeed())
			g.Expect(p.Finalizers).To(ContainElement(catalystv1.Finalizer))
			g.Expect(p.Status.Environments).To(BeEquivalentTo(2))
			for _, e := range envs {
				g.Expect(getEnv(ctx, e).Status.Namespace).NotTo(BeEmpty())
			}
		}).Should(Succeed())

		Expect(k8s.Delete(ctx, p)).To(Succeed())
		for _, e := range envs {
			Eventually(func(g Gomega) { g.Expect(getEnv(ctx, e).DeletionTimestamp).NotTo(BeNil()) }).Should(Succeed())
		}
		Consistently(func() error { return k8s.Get(ctx, key, &catalystv1.Project{}) }).Should(Succeed(), "the Project waits for its environments")
		for _, e := range envs {
			finalizeNamespace(ctx, t.namespaceOf(e.Name))
		}
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, key, &catalystv1.Project{})) }).Should(BeTrue())
	})
})

var _ = Describe("Project counts", func() {
	It("follow an Environment moved to another Project: both Projects are recounted", func(ctx SpecContext) {
		t := newTeam(ctx)
		Expect(k8s.Create(ctx, t.project("api"))).To(Succeed())
		a, b := t.environment("a"), t.environment("b")
		for _, e := range []*catalystv1.Environment{a, b} {
			Expect(k8s.Create(ctx, e)).To(Succeed())
		}
		count := func(name string) func(g Gomega) int32 {
			return func(g Gomega) int32 {
				p := &catalystv1.Project{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: t.projectNS, Name: name}, p)).To(Succeed())
				return p.Status.Environments
			}
		}
		Eventually(ctx, count("web")).Should(BeEquivalentTo(2))

		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := getEnv(ctx, b)
			got.Spec.ProjectRef.Name = "api"
			return k8s.Update(ctx, got)
		})).To(Succeed())
		Eventually(ctx, count("web")).Should(BeEquivalentTo(1))
		Eventually(ctx, count("api")).Should(BeEquivalentTo(1))

		Expect(k8s.Delete(ctx, a)).To(Succeed())
		finalizeNamespace(ctx, t.namespaceOf("a"))
		Eventually(ctx, count("web")).Should(BeEquivalentTo(0))
		Expect(k8s.Delete(ctx, b)).To(Succeed())
		finalizeNamespace(ctx, t.namespaceOf("b"))
		Eventually(ctx, count("api")).Should(BeEquivalentTo(0))
	})
})

// touch wakes the reconciler without changing what it computes: a label it does not read.
func touch(ctx context.Context, env *catalystv1.Environment) {
	GinkgoHelper()
	got := getEnv(ctx, env)
	got.Labels["touched"] = rand.String(5)
	Expect(k8s.Update(ctx, got)).To(Succeed())
}
