package catalyst

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/render/rendertest"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The catalyst counters move where things happen, in the suite's real reconciles: a commit deployed, one
// refused by render.Policy, and one refused by the whole-commit dry run.
var _ = Describe("metrics", func() {
	It("metrics: a deploy is counted with its Git fetch and registry check; a policy refusal and a dry-run refusal are counted by check", func(ctx SpecContext) {
		reg := prometheus.NewRegistry()
		Expect(opmetrics.Register(reg, k8s, nil)).To(Succeed())
		value := func(name string, labels map[string]string) func() float64 {
			return func() float64 { return testenv.Metric(reg, name, labels) }
		}
		deployed := value("platform_operator_catalyst_deploys_total", map[string]string{"type": "manifest", "result": instruments.ResultSucceeded})
		failed := value("platform_operator_catalyst_deploys_total", map[string]string{"type": "manifest", "result": instruments.ResultFailed})
		fetched := value("platform_operator_catalyst_git_fetch_duration_seconds", map[string]string{"result": instruments.ResultSucceeded})
		checked := value("platform_operator_catalyst_registry_check_duration_seconds", map[string]string{"result": instruments.ResultSucceeded})
		policy := value("platform_operator_catalyst_refusals_total", map[string]string{"check": instruments.RefusalPolicy})
		dryRun := value("platform_operator_catalyst_refusals_total", map[string]string{"check": instruments.RefusalDryRun})
		d0, f0, g0, c0, p0, r0 := deployed(), failed(), fetched(), checked(), policy(), dryRun()

		By("a repository without an escape: deployed")
		t, repo, commit := deployTeam(ctx, catalystv1.DeploymentManifest, "deploy", rendertest.Manifests())
		env, ns := deployEnv(ctx, t, "pr-metrics", commit)
		webContainer(ctx, ns)
		Eventually(deployed).Should(BeNumerically(">", d0))
		Expect(fetched()).To(BeNumerically(">", g0))
		Expect(checked()).To(BeNumerically(">", c0))

		By("a ClusterRoleBinding: refused by render.Policy")
		pushCommit(ctx, t, repo, env, "cluster bind", map[string]string{"deploy/bind.yaml": clusterRoleBinding})
		refusedWith(ctx, env, catalystv1.ReasonObjectsRefused, "ClusterRoleBinding own-the-cluster")
		Eventually(policy).Should(BeNumerically(">", p0))
		Eventually(failed).Should(BeNumerically(">", f0))

		By("a privileged pod: refused by the dry run")
		pushCommit(ctx, t, repo, env, "privileged", map[string]string{"deploy/bind.yaml": privilegedPod})
		refusedWith(ctx, env, catalystv1.ReasonApplyFailed, "dry run", "PodSecurity")
		Eventually(dryRun).Should(BeNumerically(">", r0))
	})
})
