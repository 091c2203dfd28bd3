package catalyst

import (
	"context"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/reconcile"
)

// statusOwned is the status fields field manager owns on env, as the API server records them (the
// status subresource's managedFields entry, flattened to its keys: "f:build", "k:{\"type\":\"Ready\"}").
func statusOwned(env *catalystv1.Environment, owner string) string {
	GinkgoHelper()
	var keys []string
	for _, e := range env.ManagedFields {
		if e.Manager != owner || e.Subresource != "status" || e.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		Expect(json.Unmarshal(e.FieldsV1.Raw, &fields)).To(Succeed())
		status, _ := fields["f:status"].(map[string]any)
		for k, v := range status {
			keys = append(keys, k)
			if sub, ok := v.(map[string]any); ok && k == "f:conditions" {
				for ck := range sub {
					keys = append(keys, ck)
				}
			}
		}
	}
	return strings.Join(keys, " ")
}

// applyStatus applies status as field manager owner, taking over what another manager holds.
func applyStatus(ctx context.Context, env *catalystv1.Environment, owner string, status map[string]any) {
	GinkgoHelper()
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGroupVersionKind(catalystv1.GroupVersion.WithKind("Environment"))
	u.SetNamespace(env.Namespace)
	u.SetName(env.Name)
	Expect(k8s.Status().Patch(ctx, u, client.Apply, client.FieldOwner(owner), client.ForceOwnership)).To(Succeed())
}

// legacyStatus gives env the status an operator from before the split left: every field, status.build
// included, owned by environmentFieldOwner alone.
func legacyStatus(ctx context.Context, env *catalystv1.Environment) {
	GinkgoHelper()
	got := getEnv(ctx, env)
	got.Status.Build = &catalystv1.BuildStatus{CommitSHA: "abc123", Failure: "Job x failed: exit 1"}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&got.Status)
	Expect(err).NotTo(HaveOccurred())
	applyStatus(ctx, env, environmentFieldOwner, status)
	applyStatus(ctx, env, buildFieldOwner, map[string]any{})
	applyStatus(ctx, env, deployFieldOwner, map[string]any{})
	got = getEnv(ctx, env)
	Expect(statusOwned(got, buildFieldOwner)).To(BeEmpty())
	Expect(statusOwned(got, environmentFieldOwner)).To(ContainSubstring("f:build"))
}

var _ = Describe("Environment status writers", func() {
	It("writes each part under its own field manager", func(ctx SpecContext) {
		t := newTeam(ctx)
		// A Project that does not exist: the environment is reconciled once and then waits.
		env := catalysttest.Environment(t.envNS, "owners", t.name, "missing")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionNamespaceReady).Reason).To(Equal(catalystv1.ReasonProjectNotFound))
			g.Expect(condition(g, got, catalystv1.ConditionDeploymentReady).Reason).To(Equal(catalystv1.ReasonWaiting))
			g.Expect(statusOwned(got, deployFieldOwner)).To(ContainSubstring(`k:{"type":"DeploymentReady"}`))
		}).Should(Succeed())
		got := getEnv(ctx, env)
		build, deploy, main := statusOwned(got, buildFieldOwner), statusOwned(got, deployFieldOwner), statusOwned(got, environmentFieldOwner)
		Expect(build).To(ContainSubstring(`k:{"type":"BuildReady"}`))
		Expect(deploy).To(ContainSubstring(`k:{"type":"DeploymentReady"}`))
		for _, c := range []string{catalystv1.ConditionReady, catalystv1.ConditionNamespaceReady, catalystv1.ConditionIngressReady} {
			Expect(main).To(ContainSubstring(`k:{"type":"` + c + `"}`))
			Expect(build + deploy).NotTo(ContainSubstring(`k:{"type":"` + c + `"}`))
		}
		Expect(main).To(ContainSubstring("f:phase"))
		Expect(main).NotTo(ContainSubstring("BuildReady"))
		Expect(main).NotTo(ContainSubstring("DeploymentReady"))
		Expect(build).NotTo(ContainSubstring("DeploymentReady"))
	})

	It("keeps the status an operator from before the split wrote, moving each part to its writer", func(ctx SpecContext) {
		t := newTeam(ctx)
		// A Project that does not exist: the environment is reconciled once and then waits.
		env := catalysttest.Environment(t.envNS, "legacy", t.name, "missing")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionReady).Reason).To(Equal(catalystv1.ReasonProjectNotFound))
			g.Expect(statusOwned(got, deployFieldOwner)).NotTo(BeEmpty())
		}).Should(Succeed())

		// A new operator process: writers that have not written this Environment yet, build first and
		// the Environment reconciler's summary last, as Reconcile runs them.
		legacyStatus(ctx, env)
		got := getEnv(ctx, env)
		Expect(newClaimingWriter(k8s, buildFieldOwner, buildFields, buildConditions).Write(ctx, got, &got.Status)).To(Succeed())
		got = getEnv(ctx, env)
		Expect(newClaimingWriter(k8s, environmentFieldOwner, environmentFields, environmentConditions).Write(ctx, got, &got.Status)).To(Succeed())
		got = getEnv(ctx, env)
		Expect(got.Status.Build).NotTo(BeNil(), "status.build survives the summary's first write")
		Expect(got.Status.Build.Failure).To(Equal("Job x failed: exit 1"))
		Expect(statusOwned(got, buildFieldOwner)).To(ContainSubstring("f:build"))
		Expect(statusOwned(got, environmentFieldOwner)).NotTo(ContainSubstring("f:build"))
		Expect(statusOwned(got, environmentFieldOwner)).NotTo(ContainSubstring("BuildReady"))

		// Control: a build writer that does not claim (a plain StatusWriter, which writes only what
		// differs) leaves the legacy owner alone, and the summary's write then removes status.build.
		legacyStatus(ctx, env)
		got = getEnv(ctx, env)
		plain := &reconcile.StatusWriter{Client: k8s, FieldOwner: buildFieldOwner, Fields: buildFields, Conditions: buildConditions}
		Expect(plain.Write(ctx, got, &got.Status)).To(Succeed())
		got = getEnv(ctx, env)
		Expect(newClaimingWriter(k8s, environmentFieldOwner, environmentFields, environmentConditions).Write(ctx, got, &got.Status)).To(Succeed())
		Expect(getEnv(ctx, env).Status.Build).To(BeNil())
	})
})
