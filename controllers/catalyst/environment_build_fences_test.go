package catalyst

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// setCommit changes an environment's spec.source.commitSha.
func setCommit(ctx context.Context, env *catalystv1.Environment, commit string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := getEnv(ctx, env)
		got.Spec.Source.CommitSHA = commit
		return k8s.Update(ctx, got)
	})).To(Succeed())
}

// nudge wakes env's reconciler with a label change, retrying when the controller's status write got in
// between the read and the update.
func nudge(ctx context.Context, env *catalystv1.Environment) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := getEnv(ctx, env)
		got.Labels["touched"] = commitSHA()[:5]
		return k8s.Update(ctx, got)
	})).To(Succeed())
}

// buildFenceEgress is a NetworkPolicy's egress as "PROTO/port" strings, with " public" for a port open
// to public addresses only (catalyst.PublicIPv4 and PublicIPv6) and " to <cidr>" for one open to one
// address. Any other destination fails the spec, as does a rule without destinations but DNS's.
func buildFenceEgress(np *networkingv1.NetworkPolicy) []string {
	GinkgoHelper()
	var out []string
	for _, e := range np.Spec.Egress {
		to := ""
		switch {
		case len(e.To) == 0:
			for _, p := range e.Ports {
				Expect(p.Port.IntValue()).To(Equal(53), "only DNS goes to any address")
			}
		case len(e.To) == 2 && e.To[0].IPBlock != nil && e.To[1].IPBlock != nil:
			Expect(*e.To[0].IPBlock).To(Equal(catalyst.PublicIPv4))
			Expect(*e.To[1].IPBlock).To(Equal(catalyst.PublicIPv6))
			to = " public"
		case len(e.To) == 1 && e.To[0].IPBlock != nil && len(e.To[0].IPBlock.Except) == 0:
			to = " to " + e.To[0].IPBlock.CIDR
		default:
			Fail(fmt.Sprintf("unexpected egress destinations %+v", e.To))
		}
		for _, p := range e.Ports {
			out = append(out, string(*p.Protocol)+"/"+p.Port.String()+to)
		}
	}
	return out
}

// reachesLinkLocal says whether a rule of np lets a build pod reach 169.254.0.0/16 on a port other
// than DNS's: a rule without destinations, or an ipBlock overlapping it without excepting it whole.
func reachesLinkLocal(np *networkingv1.NetworkPolicy) bool {
	linkLocal := netip.MustParsePrefix("169.254.0.0/16")
	for _, e := range np.Spec.Egress {
		dnsOnly := len(e.Ports) > 0
		for _, p := range e.Ports {
			dnsOnly = dnsOnly && p.Port.IntValue() == 53
		}
		if dnsOnly {
			continue
		}
		if len(e.To) == 0 {
			return true
		}
		for _, peer := range e.To {
			if peer.IPBlock == nil {
				continue
			}
			if netip.MustParsePrefix(peer.IPBlock.CIDR).Overlaps(linkLocal) &&
				!slices.ContainsFunc(peer.IPBlock.Except, func(c string) bool {
					p := netip.MustParsePrefix(c)
					return p.Bits() <= 16 && p.Contains(linkLocal.Addr())
				}) {
				return true
			}
		}
	}
	return false
}

// expectBuildReason waits for env's BuildReady reason with a message holding msg.
func expectBuildReason(ctx context.Context, env *catalystv1.Environment, reason, msg string) {
	GinkgoHelper()
	expectCondition(ctx, env, catalystv1.ConditionBuildReady, reason, msg)
}

var _ = Describe("Environment builds' fences", func() {
	It("fences the build pods with a NetworkPolicy, hands them the Git CA, and adopts neither from someone else", func(ctx SpecContext) {
		t := buildTeam(ctx)
		env, commit := t.createAtNewCommit(ctx, "fence-1")
		job := theBuildJob(ctx, t, env, commit)

		By("the NetworkPolicy: build pods only, nothing in, DNS and the registry's and Git host's ports out")
		np := &networkingv1.NetworkPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: t.projectNS, Name: catalyst.BuildNetworkPolicyName}, np)).To(Succeed())
		Expect(np.Labels).To(HaveKeyWithValue(oplabels.ManagedByLabel, oplabels.OperatorName))
		Expect(np.OwnerReferences).To(BeEmpty(), "the namespace's Projects share it")
		Expect(np.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{
			oplabels.NameLabel: catalyst.BuildApp, oplabels.ManagedByLabel: oplabels.OperatorName}))
		for k, v := range np.Spec.PodSelector.MatchLabels {
			Expect(job.Spec.Template.Labels).To(HaveKeyWithValue(k, v), "the policy selects the build pods")
		}
		Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		Expect(np.Spec.Ingress).To(BeEmpty())
		_, port, err := net.SplitHostPort(testRegistry.Host)
		Expect(err).NotTo(HaveOccurred())
		// The suite lists 127.0.0.1 (--catalyst-registries): the registry is reached on that address and
		// its port alone; 443 (the Git host github.com, base images) on public addresses only.
		Expect(buildFenceEgress(np)).To(ConsistOf("UDP/53", "TCP/53", "TCP/443 public", "TCP/"+port+" to 127.0.0.1/32"))
		Expect(reachesLinkLocal(np)).To(BeFalse(), "no rule reaches 169.254.0.0/16 (a cloud's metadata service)")

		By("the Git CA: a ConfigMap of the operator's, one file in the builder's certificate directory")
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: t.projectNS, Name: catalyst.GitCAConfigMapName}, cm)).To(Succeed())
		Expect(cm.Data).To(Equal(map[string]string{catalyst.GitCAKey: testGitCA}))
		Expect(cm.Labels).To(HaveKeyWithValue(oplabels.ManagedByLabel, oplabels.OperatorName))
		c := job.Spec.Template.Spec.Containers[0]
		Expect(c.VolumeMounts).To(ContainElement(And(
			HaveField("MountPath", "/kaniko/ssl/certs/"+catalyst.GitCAFile), HaveField("SubPath", catalyst.GitCAFile))))
		Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "SSL_CERT_DIR", Value: "/kaniko/ssl/certs"}))
		Eventually(normalEvents(ctx, env, "Created")).Should(ContainElement(And(
			ContainSubstring("NetworkPolicy "+catalyst.BuildNetworkPolicyName), ContainSubstring("ConfigMap "+catalyst.GitCAConfigMapName))))

		By("a second Project of the namespace on another port opens it too, for both; a third whose registry is not allowed opens nothing")
		other := catalysttest.Project(t.projectNS, "api")
		other.Spec.Build = &catalystv1.ProjectBuild{Registry: "127.0.0.1:5999"}
		other.Spec.Source.RepositoryURL = "https://git.internal.test:8443/org/api"
		Expect(k8s.Create(ctx, other)).To(Succeed())
		hostile := catalysttest.Project(t.projectNS, "metadata")
		hostile.Spec.Build = &catalystv1.ProjectBuild{Registry: "169.254.169.254:80"}
		hostile.Spec.Source.RepositoryURL = "https://169.254.169.254:8080/latest"
		Expect(k8s.Create(ctx, hostile)).To(Succeed())
		setCommit(ctx, env, commitSHA())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(np), np)).To(Succeed())
			g.Expect(buildFenceEgress(np)).To(ConsistOf("UDP/53", "TCP/53", "TCP/443 public", "TCP/"+port+" to 127.0.0.1/32",
				"TCP/5999 to 127.0.0.1/32", "TCP/8443 public", "TCP/8080 public"))
		}).Should(Succeed())
		Expect(reachesLinkLocal(np)).To(BeFalse(), "the Project naming 169.254.169.254 opens no way there")
		// Positive control of the check itself: the policy as it was before (ports to any address) reaches it.
		open := np.DeepCopy()
		open.Spec.Egress[1].To = nil
		Expect(reachesLinkLocal(open)).To(BeTrue())
		expectNoWrites(ctx, t, env, t.namespaceOf("fence-1"))

		By("hostile: a NetworkPolicy and a ConfigMap of those names the operator did not make")
		for i, theirs := range []client.Object{
			&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: catalyst.BuildNetworkPolicyName},
				Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: catalyst.GitCAConfigMapName}, Data: map[string]string{"ca.crt": "theirs"}},
		} {
			t := buildTeam(ctx)
			theirs.SetNamespace(t.projectNS)
			Expect(k8s.Create(ctx, theirs)).To(Succeed())
			rv := theirs.GetResourceVersion()
			env := t.environment("fence-" + strconv.Itoa(i+2))
			env.Spec.Source.CommitSHA = commitSHA()
			Expect(k8s.Create(ctx, env)).To(Succeed())
			expectBuildReason(ctx, env, catalystv1.ReasonNameConflict, "was not made by the operator")
			Eventually(warningEvents(ctx, env, catalystv1.ReasonNameConflict)).ShouldNot(BeEmpty())
			Consistently(func(g Gomega) {
				g.Expect(buildJobs(ctx, g, t, env)).To(BeEmpty(), "no build without its fence")
				live := theirs.DeepCopyObject().(client.Object)
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), live)).To(Succeed())
				g.Expect(live.GetResourceVersion()).To(Equal(rv), "theirs is left untouched")
			}).Should(Succeed())
		}
	})

	It("refuses a registry outside --catalyst-registries and a Git host builds may not clone from", func(ctx SpecContext) {
		t := buildTeam(ctx)
		t.updateProject(ctx, func(p *catalystv1.Project) { p.Spec.Build.Registry = "registry.evil.test:5000" })
		env, commit := t.createAtNewCommit(ctx, "allow-1")

		expectBuildReason(ctx, env, catalystv1.ReasonRegistryNotAllowed, "registry.evil.test:5000")
		Eventually(warningEvents(ctx, env, catalystv1.ReasonRegistryNotAllowed)).Should(HaveLen(1))
		Expect(getEnv(ctx, env).Status.Build).To(BeNil())
		Consistently(func(g Gomega) { g.Expect(buildJobs(ctx, g, t, env)).To(BeEmpty()) }).Should(Succeed())
		expectNoWrites(ctx, t, env, t.namespaceOf("allow-1"))

		By("an allowed registry, a forbidden Git host: still no Job")
		t.updateProject(ctx, func(p *catalystv1.Project) {
			p.Spec.Build.Registry = testRegistry.Host
			p.Spec.Source.RepositoryURL = "https://" + forbiddenGitHost + "/org/repo"
		})
		expectBuildReason(ctx, env, catalystv1.ReasonGitHostNotAllowed, forbiddenGitHost)
		Eventually(warningEvents(ctx, env, catalystv1.ReasonGitHostNotAllowed)).Should(HaveLen(1))
		Consistently(func(g Gomega) { g.Expect(buildJobs(ctx, g, t, env)).To(BeEmpty()) }).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: t.projectNS, Name: catalyst.BuildNetworkPolicyName},
			&networkingv1.NetworkPolicy{})).To(Satisfy(apierrors.IsNotFound), "nothing is made for a build that is refused")

		By("positive control: an allowed Git host builds")
		t.updateProject(ctx, func(p *catalystv1.Project) { p.Spec.Source.RepositoryURL = "https://github.com/org/repo" })
		theBuildJob(ctx, t, env, commit)
		expectBuildReason(ctx, env, catalystv1.ReasonBuilding, "is building")
	})

	It("builds a Project without spec.build into the default registry", func(ctx SpecContext) {
		t := newTeam(ctx)
		Expect(k8s.Create(ctx, testRegistry.Secret(t.projectNS, registrySecret))).To(Succeed())
		env, commit := t.createAtNewCommit(ctx, "default-1")

		job := theBuildJob(ctx, t, env, commit)
		image := testRegistry.Host + "/" + t.projectNS + "/web:" + commit
		c := job.Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("--destination="+image, "--dockerfile=/kaniko/buildcontext/Dockerfile"))
		Expect(c.Args).NotTo(ContainElement(HavePrefix("--context-sub-path")))
		Expect(job.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", registrySecret)))
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonBuilding))
			g.Expect(got.Status.Build.JobName).To(Equal(job.Name))
		}).Should(Succeed())

		pushAndFinish(ctx, env, job, image, nil)
	})

	It("quotes no credential of a failed build in its status or event", func(ctx SpecContext) {
		t := buildTeam(ctx)
		env, commit := t.createAtNewCommit(ctx, "redact-1")
		job := theBuildJob(ctx, t, env, commit)

		// The git Secret's token, the registry's password, and a token of a known shape.
		const gitToken = "not-a-real-token"
		leaked := "clone of https://x-access-token:" + gitToken + "@github.com/org/repo failed; GIT_TOKEN is " + gitToken +
			"; push as " + registryUser + " with " + registryPassword + " refused; ghp_0123456789abcdefghijABCDEFGHIJ012345"
		finishJobSaying(ctx, job, false, batchv1.JobReasonBackoffLimitExceeded, leaked)
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			c := condition(g, got, catalystv1.ConditionBuildReady)
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonBuildFailed))
			g.Expect(got.Status.Build.Failure).To(ContainSubstring(catalyst.Redacted))
			for _, text := range []string{c.Message, got.Status.Build.Failure, condition(g, got, catalystv1.ConditionReady).Message} {
				g.Expect(text).To(ContainSubstring("github.com/org/repo failed"), "the rest of the message stays")
				for _, secret := range []string{gitToken, registryPassword, "ghp_0123456789"} {
					g.Expect(text).NotTo(ContainSubstring(secret))
				}
			}
		}).Should(Succeed())
		Eventually(warningEvents(ctx, env, catalystv1.ReasonBuildFailed)).Should(ConsistOf(
			And(ContainSubstring(catalyst.Redacted), Not(ContainSubstring(gitToken)), Not(ContainSubstring(registryPassword)),
				Not(ContainSubstring("ghp_0123456789")))))
	})

	It("gives up on a registry that does not answer, for that Environment alone", func(ctx SpecContext) {
		silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		DeferCleanup(silent.Close)
		slow := buildTeam(ctx)
		slow.updateProject(ctx, func(p *catalystv1.Project) {
			p.Spec.Build.Registry = strings.TrimPrefix(silent.URL, "http://")
			p.Spec.Build.RegistrySecretRef = nil
		})
		stuck := slow.environment("slow-1")
		stuck.Spec.Source.CommitSHA = commitSHA()
		Expect(k8s.Create(ctx, stuck)).To(Succeed())

		fast := buildTeam(ctx)
		commit := commitSHA()
		fast.pushImage(commit)
		ok := fast.createAt(ctx, "fast-1", commit)

		Eventually(func(g Gomega) {
			g.Expect(condition(g, getEnv(ctx, ok), catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonImageExists))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			got := getEnv(ctx, stuck)
			c := condition(g, got, catalystv1.ConditionBuildReady)
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonRegistryUnreachable))
			g.Expect(c.Message).To(ContainSubstring("deadline exceeded"))
			g.Expect(got.Status.Phase).To(Equal(catalystv1.PhaseBuilding))
		}).WithTimeout(testRegistryTimeout + 20*time.Second).Should(Succeed())
		Expect(buildJobs(ctx, Default, slow, stuck)).To(BeEmpty())
	})
})
