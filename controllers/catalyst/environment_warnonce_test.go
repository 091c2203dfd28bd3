package catalyst

import (
	"context"
	"fmt"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// A failure the user was told of is not told again on every reconcile that finds it (s.Fail, s.Refuse,
// s.WarnOnce, against the conditions as the reconcile read them); a failure that changed is. Each spec
// has its control: a changed message (or reason) gets a Warning of its own, so a check that never warned
// would fail it, and the repeated reconcile is shown to have happened, so the old code (a Warning on
// every reconcile) would fail it too.

// warnings runs step on a scope of env as the reconcile would read it (env's status) and returns the
// Warning events it emitted, with the conditions it left, which the next call reads as env's status.
func warnings(ctx context.Context, r *EnvironmentReconciler, env *catalystv1.Environment,
	prepare func(*environmentScope), step func(context.Context, *environmentScope)) []string {
	GinkgoHelper()
	rec := record.NewFakeRecorder(16)
	r.Recorder = rec
	s := r.newEnvironmentScope(env)
	if prepare != nil {
		prepare(s)
	}
	step(ctx, s)
	env.Status.Conditions = *s.Conditions
	close(rec.Events)
	var out []string
	for e := range rec.Events {
		out = append(out, e)
	}
	return out
}

// stepOf turns a reconcile step into one whose result is checked to be no error.
func stepOf(step func(context.Context, *environmentScope) (any, error)) func(context.Context, *environmentScope) {
	return func(ctx context.Context, s *environmentScope) {
		GinkgoHelper()
		_, err := step(ctx, s)
		Expect(err).NotTo(HaveOccurred())
	}
}

var _ = Describe("Environment warnings", func() {
	It("warns once of a missing Project, however often the Environment is reconciled, and again when it names another", func(ctx SpecContext) {
		t := newTeam(ctx)
		env := catalysttest.Environment(t.envNS, "pr-1", t.name, "api") // no Project api in its namespace
		Expect(k8s.Create(ctx, env)).To(Succeed())
		missing := func(name string) string {
			return fmt.Sprintf("Project %s named by spec.projectRef does not exist in namespace %s", name, t.envNS)
		}
		expectCondition(ctx, env, catalystv1.ConditionNamespaceReady, catalystv1.ReasonProjectNotFound, missing("api"))
		Eventually(eventCount(ctx, env, corev1.EventTypeWarning, catalystv1.ReasonProjectNotFound, missing("api"))).Should(BeEquivalentTo(1))

		By("reconciles that find it missing again: the retry-build annotation wakes the reconciler, spec unchanged")
		reconciles := func() float64 {
			return testenv.Metric(crmetrics.Registry, "controller_runtime_reconcile_total",
				map[string]string{"controller": "environment", "result": "success"})
		}
		for i := range 3 {
			before := reconciles()
			updateEnv(ctx, env, func(e *catalystv1.Environment) { e.Annotations[catalystv1.AnnotationRetryBuild] = strconv.Itoa(i) })
			Eventually(reconciles).Should(BeNumerically(">", before), "the annotation must have woken a reconcile")
		}
		Consistently(eventCount(ctx, env, corev1.EventTypeWarning, catalystv1.ReasonProjectNotFound, missing("api"))).Should(BeEquivalentTo(1),
			"the same missing Project is not news")

		By("the control: another missing Project is news")
		updateEnv(ctx, env, func(e *catalystv1.Environment) { e.Spec.ProjectRef.Name = "api2" })
		Eventually(eventCount(ctx, env, corev1.EventTypeWarning, catalystv1.ReasonProjectNotFound, missing("api2"))).Should(BeEquivalentTo(1))
		Expect(eventCount(ctx, env, corev1.EventTypeWarning, catalystv1.ReasonProjectNotFound, missing("api"))()).To(BeEquivalentTo(1))
	})

	// The steps themselves, run twice on the status the first run left (as the next reconcile reads it),
	// against the suite's API server: one Warning, none the second time, one for a changed failure.
	It("warns once of a namespace in the way, retried every minute, and again when the conflict changes", func(ctx SpecContext) {
		t := newTeam(ctx)
		env := t.environment("taken")
		ns := t.namespaceOf("taken")
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		env.UID = "uid-taken"
		r := &EnvironmentReconciler{Defaults: testDefaults, Client: k8s, APIReader: k8s}
		step := stepOf(func(ctx context.Context, s *environmentScope) (any, error) {
			if _, err := r.reconcileProject(ctx, s); err != nil {
				return nil, err
			}
			Expect(s.project).NotTo(BeNil())
			return r.reconcileNamespace(ctx, s)
		})

		Expect(warnings(ctx, r, env, nil, step)).To(ConsistOf(HavePrefix("Warning NamespaceConflict namespace " + ns + " was not made by the operator")))
		Expect(warnings(ctx, r, env, nil, step)).To(BeEmpty(), "the retry finds the same conflict: no second Warning")

		By("the control: the namespace is now another Environment's")
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		finalizeNamespace(ctx, ns)
		Eventually(func() error {
			return k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
				Labels:      map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName},
				Annotations: map[string]string{catalyst.OwnerAnnotation: "elsewhere/taken", catalyst.OwnerUIDAnnotation: "another-uid"}}})
		}).Should(Succeed())
		Expect(warnings(ctx, r, env, nil, step)).To(ConsistOf(ContainSubstring("Environment elsewhere/taken (uid another-uid)")))
		Expect(warnings(ctx, r, env, nil, step)).To(BeEmpty())
	})

	It("warns once of a Project without a registry, and again for a registry the operator may not use", func(ctx SpecContext) {
		t := newTeam(ctx)
		env := t.environment("build")
		env.Spec.Source.CommitSHA = "0123456789abcdef0123456789abcdef01234567"
		p := t.project("web")
		r := &EnvironmentReconciler{Defaults: testDefaults, Client: k8s, APIReader: k8s}
		b := &buildPhase{Client: k8s, APIReader: k8s, Build: catalyst.BuildConfig{Registries: []string{"registry.example.com"}}}
		found := func(s *environmentScope) { s.project, s.namespace = p, t.namespaceOf("build") }
		step := stepOf(func(ctx context.Context, s *environmentScope) (any, error) { return b.reconcileBuild(ctx, s) })

		Expect(warnings(ctx, r, env, found, step)).To(ConsistOf(HavePrefix("Warning BuildNotConfigured Project " + t.projectNS + "/web has no spec.build")))
		Expect(warnings(ctx, r, env, found, step)).To(BeEmpty())

		By("the control: another reason")
		p.Spec.Build = &catalystv1.ProjectBuild{Registry: "elsewhere.example.com", Repository: "team/app"}
		Expect(warnings(ctx, r, env, found, step)).To(ConsistOf(HavePrefix("Warning RegistryNotAllowed registry elsewhere.example.com")))
		Expect(warnings(ctx, r, env, found, step)).To(BeEmpty())

		By("the control: the same reason, another registry to fix")
		p.Spec.Build.Registry = "other.example.com"
		Expect(warnings(ctx, r, env, found, step)).To(ConsistOf(HavePrefix("Warning RegistryNotAllowed registry other.example.com")))
	})

	It("warns once of a workload whose pods the cluster refuses, and again when the refusal changes", func(ctx SpecContext) {
		t := newTeam(ctx)
		env := t.environment("refused")
		ns := t.envNS
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}}}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		refuse := func(why string) {
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: why}}}
			Expect(k8s.Status().Update(ctx, d)).To(Succeed())
		}
		refuse(`pods "web-1" is forbidden: violates PodSecurity "restricted:latest"`)
		objs := []*unstructured.Unstructured{{}}
		objs[0].SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		objs[0].SetNamespace(ns)
		objs[0].SetName("web")
		r := &EnvironmentReconciler{Defaults: testDefaults, Client: k8s, APIReader: k8s}
		dp := &deployPhase{Client: k8s}
		deployed := func(s *environmentScope) {
			s.status.Deployment = &catalystv1.DeploymentStatus{Commit: "0123456789abcdef", Type: catalystv1.DeploymentManifest}
		}
		step := stepOf(func(ctx context.Context, s *environmentScope) (any, error) { return dp.reportReady(ctx, s, objs) })

		Expect(warnings(ctx, r, env, deployed, step)).To(ConsistOf(And(HavePrefix("Warning ReplicaFailure"), ContainSubstring("PodSecurity"))))
		Expect(warnings(ctx, r, env, deployed, step)).To(BeEmpty(), "the same refusal read again: no second Warning")

		By("the control: the quota refuses them now")
		refuse(`pods "web-2" is forbidden: exceeded quota: environment`)
		Expect(warnings(ctx, r, env, deployed, step)).To(ConsistOf(And(HavePrefix("Warning ReplicaFailure"), ContainSubstring("exceeded quota"))))
	})
})
