package catalyst

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/render/rendertest"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// Hostile repositories: each commit tries to make the operator act outside the environment's namespace,
// and the suite checks afterwards that nothing of it exists. Every spec has its positive control: the same
// repository without the escape deploys.

// absent expects obj not to exist in the cluster.
func absent(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s must not exist: %v", obj, client.ObjectKeyFromObject(obj), err)
}

// refusedWith waits for env's DeploymentReady to be False with reason, its message holding each of want.
func refusedWith(ctx context.Context, env *catalystv1.Environment, reason string, want ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := condition(g, getEnv(ctx, env), catalystv1.ConditionDeploymentReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(reason), "%+v", c)
		for _, w := range want {
			g.Expect(c.Message).To(ContainSubstring(w))
		}
	}).Should(Succeed())
}

// pushCommit commits files to repo, pushes the commit's image and points env at it.
func pushCommit(ctx context.Context, t team, repo interface {
	Commit(string, map[string]string, ...string) (string, error)
}, env *catalystv1.Environment, message string, files map[string]string) string {
	GinkgoHelper()
	commit, err := repo.Commit(message, files)
	Expect(err).NotTo(HaveOccurred())
	t.pushImage(commit)
	setCommit(ctx, env, commit)
	return commit
}

const privilegedPod = `apiVersion: v1
kind: Pod
metadata:
  name: root
spec:
  containers:
  - name: root
    image: busybox
    securityContext: {privileged: true}
`

const clusterAdminBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: own-the-cluster
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: default}
`

const clusterRoleBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: own-the-cluster
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: default, namespace: default}
`

const foreignIngress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: phish
spec:
  rules:
  - host: login.bank.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: app, port: {name: http}}}}
`

const borrowDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: borrow
spec:
  selector: {matchLabels: {app: borrow}}
  template:
    metadata: {labels: {app: borrow}}
    spec:
      serviceAccountName: catalyst-deployer
      automountServiceAccountToken: true
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: busybox
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`

const deployerToken = `apiVersion: v1
kind: Secret
metadata:
  name: deployer-token
  annotations: {kubernetes.io/service-account.name: catalyst-deployer}
type: kubernetes.io/service-account-token
`

var _ = Describe("Hostile repositories", func() {
	It("are refused whole: a RoleBinding to cluster-admin, a ClusterRoleBinding, a foreign Ingress host, a privileged pod, a remote kustomize base; nothing of them exists and what runs is kept", func(ctx SpecContext) {
		t, repo, commit := deployTeam(ctx, catalystv1.DeploymentManifest, "deploy", rendertest.Manifests())
		env, ns := deployEnv(ctx, t, "pr-hostile", commit)
		webContainer(ctx, ns) // positive control: the repository without an escape deploys
		Eventually(func(g Gomega) {
			_, st := deployment(ctx, g, env)
			g.Expect(st.Commit).To(Equal(commit))
		}).Should(Succeed())

		By("a RoleBinding to cluster-admin")
		pushCommit(ctx, t, repo, env, "bind", map[string]string{"deploy/bind.yaml": clusterAdminBinding})
		refusedWith(ctx, env, catalystv1.ReasonObjectsRefused, "RoleBinding "+ns+"/own-the-cluster")
		absent(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-the-cluster"}})

		By("a ClusterRoleBinding")
		pushCommit(ctx, t, repo, env, "cluster bind", map[string]string{"deploy/bind.yaml": clusterRoleBinding})
		refusedWith(ctx, env, catalystv1.ReasonObjectsRefused, "ClusterRoleBinding own-the-cluster")
		absent(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "own-the-cluster"}})

		By("an Ingress for a host outside the environment's")
		pushCommit(ctx, t, repo, env, "phish", map[string]string{"deploy/bind.yaml": foreignIngress})
		refusedWith(ctx, env, catalystv1.ReasonObjectsRefused, "Ingress "+ns+"/phish", "login.bank.example.com")
		absent(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "phish"}})

		By("a privileged pod, which only the API server's Pod Security admission refuses: the dry run refuses the whole commit")
		pushCommit(ctx, t, repo, env, "privileged", map[string]string{"deploy/bind.yaml": privilegedPod,
			"deploy/new.yaml": strings.ReplaceAll(rendertest.Manifests()["deploy/extra/extra.yaml"], "name: extra", "name: fresh")})
		refusedWith(ctx, env, catalystv1.ReasonApplyFailed, "Pod "+ns+"/root", "dry run", "PodSecurity")
		absent(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root"}})
		absent(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"}})

		By("the same pod without privileges (the positive control) deploys, with the rest of its commit")
		fixed := pushCommit(ctx, t, repo, env, "unprivileged", map[string]string{"deploy/bind.yaml": strings.ReplaceAll(privilegedPod,
			"securityContext: {privileged: true}", "securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}")})
		Eventually(func(g Gomega) {
			_, st := deployment(ctx, g, env)
			g.Expect(st.Commit).To(Equal(fixed))
			g.Expect(st.Inventory).To(ContainElement(catalystv1.DeployedObject{Version: "v1", Kind: "Pod", Name: "root"}))
		}).Should(Succeed())
		Expect(exists(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"}})()).To(BeTrue())
		Expect(exists(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rendertest.Deployment}})()).To(BeTrue(),
			"refused commits must not prune what runs")
	})

	It("refuses a remote kustomize base before any request to it; allowed, the same base is fetched", func(ctx SpecContext) {
		var requests atomic.Int64
		base := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
			_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\ndata: {}\n"))
		}))
		DeferCleanup(base.Close)
		remoteURL := base.URL + "/evil/base.yaml"
		overlay := "resources:\n- ../base\n- " + remoteURL + "\n"

		t, repo, commit := deployTeam(ctx, catalystv1.DeploymentKustomize, "kustomize/overlay", rendertest.Kustomization())
		env, ns := deployEnv(ctx, t, "pr-remote", commit)
		webContainer(ctx, ns)
		pushCommit(ctx, t, repo, env, "remote", map[string]string{"kustomize/overlay/kustomization.yaml": overlay})
		refusedWith(ctx, env, catalystv1.ReasonRenderFailed, remoteURL, "--catalyst-allow-remote-bases")
		Expect(requests.Load()).To(BeZero(), "the guard refuses before kustomize sends any request")
		absent(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fetched"}})

		By("the positive control: the same checkout rendered with remote bases allowed fetches the base")
		checkout := GinkgoT().TempDir()
		files := rendertest.Kustomization()
		files["kustomize/overlay/kustomization.yaml"] = overlay
		for name, content := range files {
			Expect(os.MkdirAll(filepath.Dir(filepath.Join(checkout, name)), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(checkout, name), []byte(content), 0o600)).To(Succeed())
		}
		objs, err := render.Kustomize(checkout, render.Input{Path: "kustomize/overlay", AllowRemoteBases: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(requests.Load()).To(BeNumerically(">", 0))
		Expect(objs).To(ContainElement(HaveField("Object", HaveKeyWithValue("metadata", HaveKeyWithValue("name", "fetched")))))
	})

	It("refuses a commit that borrows the deployer's identity: a Deployment running as catalyst-deployer with automount, and a token Secret for it", func(ctx SpecContext) {
		t, repo, commit := deployTeam(ctx, catalystv1.DeploymentManifest, "deploy", rendertest.Manifests())
		env, ns := deployEnv(ctx, t, "pr-borrow", commit)
		webContainer(ctx, ns)
		pushCommit(ctx, t, repo, env, "borrow", map[string]string{"deploy/borrow.yaml": borrowDeployment + "---\n" + deployerToken})
		refusedWith(ctx, env, catalystv1.ReasonObjectsRefused, "Deployment "+ns+"/borrow (serviceAccountName catalyst-deployer is the identity the operator deploys as",
			"Secret "+ns+"/deployer-token (type kubernetes.io/service-account-token for ServiceAccount catalyst-deployer")
		absent(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "borrow"}})
		absent(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer-token"}})

		By("the positive control: the same Deployment as a ServiceAccount of its own deploys")
		fixed := pushCommit(ctx, t, repo, env, "own identity", map[string]string{"deploy/borrow.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n---\n" +
			strings.ReplaceAll(borrowDeployment, "serviceAccountName: catalyst-deployer", "serviceAccountName: web")})
		Eventually(func(g Gomega) {
			_, st := deployment(ctx, g, env)
			g.Expect(st.Commit).To(Equal(fixed))
		}).Should(Succeed())
		Expect(exists(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "borrow"}})()).To(BeTrue())
	})

	It("sends a chart as the tenant: an escalation only on upgrade and a lookup of another namespace's Secret are refused", func(ctx SpecContext) {
		files := rendertest.Chart()
		files["chart/templates/upgrade.yaml"] = `{{- if .Release.IsUpgrade }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: escalated
  namespace: kube-system
data: {}
{{- end }}
`
		files["chart/templates/steal.yaml"] = `{{- if .Values.steal }}
{{- $s := lookup "v1" "Secret" .Values.steal "stolen" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: loot
data:
  loot: {{ $s | toJson | quote }}
{{- end }}
`
		t, _, commit := deployTeam(ctx, catalystv1.DeploymentHelm, "chart", files)
		victim := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.projectNS, Name: "stolen"}, StringData: map[string]string{"k": "the-victims-value"}}
		Expect(k8s.Create(ctx, victim)).To(Succeed())
		env, ns := deployEnv(ctx, t, "pr-chart", commit)
		// The positive control: the install (IsUpgrade false, no lookup) goes through as the tenant.
		webContainer(ctx, ns)
		Eventually(func(g Gomega) {
			_, st := deployment(ctx, g, env)
			g.Expect(st.Revision).To(BeEquivalentTo(1))
		}).Should(Succeed())

		By("an upgrade renders a ConfigMap in kube-system: refused on what Helm sends, the release stays")
		t.updateProject(ctx, func(p *catalystv1.Project) {
			p.Spec.Deployment.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}
		})
		refusedWith(ctx, env, catalystv1.ReasonObjectsRefused, "ConfigMap kube-system/escalated", "stays deployed")
		absent(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "escalated"}})

		By("lookup of a Secret of the team's namespace is refused by the API server")
		t.updateProject(ctx, func(p *catalystv1.Project) {
			p.Spec.Deployment.Values = &apiextensionsv1.JSON{Raw: []byte(`{"steal":"` + t.projectNS + `"}`)}
		})
		refusedWith(ctx, env, catalystv1.ReasonHelmFailed, "forbidden")
		absent(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "loot"}})
		Expect(getEnv(ctx, env).Status.Conditions).NotTo(ContainElement(HaveField("Message", ContainSubstring("the-victims-value"))))
	})

	It("is what the API server enforces: the tenant identity may write the ordinary kinds in its own namespace and nothing else", func(ctx SpecContext) {
		t, _, commit := deployTeam(ctx, catalystv1.DeploymentManifest, "deploy", rendertest.Manifests())
		_, ns := deployEnv(ctx, t, "pr-identity", commit)
		webContainer(ctx, ns)
		tenant, err := client.New(tenantConfig(testEnv.Config, ns), client.Options{Scheme: scheme.Scheme})
		Expect(err).NotTo(HaveOccurred())
		cm := func(namespace string) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "probe"}}
		}
		Expect(tenant.Create(ctx, cm(ns))).To(Succeed(), "the positive control: a ConfigMap in its own namespace")
		forbidden := []client.Object{
			cm("kube-system"),
			cm(t.projectNS),
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "escalate"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "escalate-" + ns},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}}},
			&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "everywhere"}, Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}},
			&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bigger"}},
		}
		for _, o := range forbidden {
			err := tenant.Create(ctx, o)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%T %s: %v", o, client.ObjectKeyFromObject(o), err)
		}
		err = tenant.Get(ctx, client.ObjectKey{Namespace: t.projectNS, Name: "anything"}, &corev1.Secret{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "reading another namespace's Secret: %v", err)
		err = tenant.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-more"}})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a namespace: %v", err)
		Expect(catalyst.TenantUser(ns)).To(HaveSuffix(":" + catalyst.TenantServiceAccountName))
	})
})
