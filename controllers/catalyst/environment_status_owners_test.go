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
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
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

// newClaims are the claims of a new operator process, with the suite's direct client.
func newClaims() *statusClaims {
	return &statusClaims{writers: []*reconcile.StatusWriter{
		newStatusWriter(k8s, buildFieldOwner, buildFields, buildConditions),
		newStatusWriter(k8s, deployFieldOwner, deployFields, deployConditions),
		newStatusWriter(k8s, environmentFieldOwner, environmentFields, environmentConditions),
	}}
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

		// A new operator process: its claims, which run before the first reconcile's steps.
		legacyStatus(ctx, env)
		Expect(newClaims().claim(ctx, getEnv(ctx, env))).To(Succeed())
		got := getEnv(ctx, env)
		Expect(got.Status.Build).NotTo(BeNil(), "status.build survives the Environment writer's claim")
		Expect(got.Status.Build.Failure).To(Equal("Job x failed: exit 1"))
		Expect(statusOwned(got, buildFieldOwner)).To(ContainSubstring("f:build"))
		Expect(statusOwned(got, buildFieldOwner)).To(ContainSubstring(`k:{"type":"BuildReady"}`))
		Expect(statusOwned(got, environmentFieldOwner)).NotTo(ContainSubstring("f:build"))
		Expect(statusOwned(got, environmentFieldOwner)).NotTo(ContainSubstring("BuildReady"))
		Expect(statusOwned(got, environmentFieldOwner)).To(ContainSubstring("f:phase"))
		// Once claimed, the claims send nothing more for the same Environment.
		before := got.ResourceVersion
		claims := newClaims()
		Expect(claims.claim(ctx, got)).To(Succeed())
		Expect(claims.claim(ctx, getEnv(ctx, env))).To(Succeed())
		Expect(getEnv(ctx, env).ResourceVersion).To(Equal(before), "a claim of what the writers already own writes nothing")

		// A restart sends no request for an Environment whose parts already have their writers; the
		// legacy status (control) gets its claims.
		var patches int
		direct, err := client.NewWithWatch(testEnv.Config, client.Options{Scheme: k8s.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		counting := interceptor.NewClient(direct, interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
				patches++
				return c.SubResource(sub).Patch(ctx, obj, p, o...)
			},
		})
		countingClaims := func() *statusClaims {
			return &statusClaims{writers: []*reconcile.StatusWriter{
				newStatusWriter(counting, buildFieldOwner, buildFields, buildConditions),
				newStatusWriter(counting, deployFieldOwner, deployFields, deployConditions),
				newStatusWriter(counting, environmentFieldOwner, environmentFields, environmentConditions),
			}}
		}
		Expect(countingClaims().claim(ctx, getEnv(ctx, env))).To(Succeed())
		Expect(patches).To(BeZero(), "claims of an Environment whose parts have their writers")
		legacyStatus(ctx, env)
		Expect(countingClaims().claim(ctx, getEnv(ctx, env))).To(Succeed())
		Expect(patches).To(Equal(3), "claims of a legacy status: one apply per writer")
		Expect(getEnv(ctx, env).Status.Build).NotTo(BeNil())

		// Control: without the build writer's claim, the Environment writer's apply removes status.build.
		legacyStatus(ctx, env)
		legacy := getEnv(ctx, env)
		main := newClaims().writers[2]
		unowned, err := withoutOwned(main, legacy)
		Expect(err).NotTo(HaveOccurred())
		Expect(main.Write(ctx, unowned, &legacy.Status)).To(Succeed())
		Expect(getEnv(ctx, env).Status.Build).To(BeNil())
	})
})
