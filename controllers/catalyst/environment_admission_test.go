package catalyst

import (
	"context"
	"fmt"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/catalyst/render/rendertest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// What the API server enforces in an environment namespace, whoever asks: the ValidatingAdmissionPolicies
// the operator keeps (internal/catalyst/admissionpolicy.go). Each refusal is asserted to be the policy's
// (its name is in the API server's answer), never the operator's guard, which these requests never pass;
// each has its positive control, the same request without the escape, admitted for the same identity.

// deniedBy expects err to be the API server's refusal by ValidatingAdmissionPolicy policy, its message
// holding each of want.
func deniedBy(err error, policy string, want ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the API server admitted what policy %s must refuse", policy)
	Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request", policy, policy)))
	for _, w := range want {
		Expect(err.Error()).To(ContainSubstring(w))
	}
}

// restrictedPod is a pod spec that Pod Security's restricted level admits, running as ServiceAccount sa.
func restrictedPod(sa string) corev1.PodSpec {
	return corev1.PodSpec{ServiceAccountName: sa, AutomountServiceAccountToken: ptr.To(true),
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "app", Image: "busybox", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}
}

// policyEnv is an environment whose namespace the operator made, with the policies enforced there.
func policyEnv(ctx context.Context, name string) (t team, ns, host string) {
	GinkgoHelper()
	t, _, commit := deployTeam(ctx, catalystv1.DeploymentManifest, "deploy", rendertest.Manifests())
	_, ns = deployEnv(ctx, t, name, commit)
	webContainer(ctx, ns)
	live := &corev1.Namespace{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, live)).To(Succeed())
	Expect(live.Labels).To(HaveKeyWithValue(catalyst.TenantNamespaceLabel, "true"))
	host = live.Annotations[catalyst.HostAnnotation] // the Project's domain, or the operator's
	Expect(host).To(HavePrefix(ns+"."), "the environment's host is <namespace>.<domain>")
	Expect(live.Annotations).To(HaveKeyWithValue(catalyst.ClusterIssuersAnnotation, catalysttest.Issuer))
	// Bindings take effect a moment after they are made: wait until the API server refuses a probe of
	// each policy (a dry run: nothing is created).
	probes := map[string]client.Object{
		catalyst.PolicyHosts: &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "probe.example.org"}}}},
		catalyst.PolicyServices: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "probe.example.org"}},
		catalyst.PolicyIdentity: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: catalyst.TenantServiceAccountName}}, Type: corev1.SecretTypeServiceAccountToken},
	}
	for policy, probe := range probes {
		Eventually(func(g Gomega) {
			err := k8s.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)
			g.Expect(err).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy '" + policy + "'")))
		}).Should(Succeed())
	}
	return t, ns, host
}

// appServiceAccount is an ordinary ServiceAccount of ns, bound to the tenant ClusterRole as a team might
// bind its own application, and a client authenticating with a token of it: what a pod of the namespace is.
func appServiceAccount(ctx context.Context, ns string) client.Client {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: catalyst.DefaultTenantClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: ns}}})).To(Succeed())
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "app", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	cfg := rest.AnonymousClientConfig(testEnv.Config)
	cfg.BearerToken = tr.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error { // the RBAC authorizer learns of the binding a moment later
		return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-probe"}}, client.DryRunAll)
	}).Should(Succeed())
	return c
}

var _ = Describe("Admission policies of environment namespaces", func() {
	It("are kept by the operator under its field owner, for the kinds served and those not (Gateway API is not served here)", func(ctx SpecContext) {
		for _, name := range catalyst.PolicyNames {
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: name}, p) }).Should(Succeed())
			Expect(oplabels.IsManaged(p.Labels)).To(BeTrue())
			Expect(p.ManagedFields).To(ContainElement(HaveField("Manager", oplabels.FieldOwner)))
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: name}, b) }).Should(Succeed())
			Expect(b.Spec.PolicyName).To(Equal(name))
		}

		By("re-applying unchanged policies writes nothing; a deleted binding is restored, with the operator's permissions only")
		keeper, err := newAdmissionPolicies(managerConfig, client.Options{Scheme: scheme.Scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(keeper.served).To(BeTrue())
		versions := func() map[string]string {
			out := map[string]string{}
			for _, obj := range catalyst.AdmissionPolicies() {
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
				out[obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName()] = obj.GetResourceVersion()
			}
			return out
		}
		before := versions()
		Expect(keeper.ensure(ctx)).To(Succeed())
		Expect(versions()).To(Equal(before))
		gone := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: catalyst.PolicyServices}}
		Expect(k8s.Delete(ctx, gone)).To(Succeed())
		Expect(keeper.ensure(ctx)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gone), gone)).To(Succeed())
		Expect(gone.Spec.PolicyName).To(Equal(catalyst.PolicyServices))

		By("a same-named policy the operator did not make is left alone and reported")
		foreign := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: catalyst.PolicyIdentity}, foreign)).To(Succeed())
		patch := client.MergeFrom(foreign.DeepCopy())
		delete(foreign.Labels, oplabels.ManagedByLabel)
		Expect(k8s.Patch(ctx, foreign, patch)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			restore := client.MergeFrom(foreign.DeepCopy())
			foreign.Labels[oplabels.ManagedByLabel] = oplabels.OperatorName
			Expect(k8s.Patch(ctx, foreign, restore)).To(Succeed())
		})
		rv := foreign.ResourceVersion
		Expect(keeper.ensure(ctx)).To(MatchError(ContainSubstring("was not made by the operator")))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())
		Expect(foreign.ResourceVersion).To(Equal(rv))
	})

	It("refuse, for the tenant identity and for an ordinary ServiceAccount of the namespace alike, what the guard refuses; the same objects without the escape are admitted", func(ctx SpecContext) {
		_, ns, host := policyEnv(ctx, "pr-vap")
		tenant, err := client.New(tenantConfig(testEnv.Config, ns), client.Options{Scheme: scheme.Scheme})
		Expect(err).NotTo(HaveOccurred())
		app := appServiceAccount(ctx, ns)

		for _, who := range []struct {
			name string
			c    client.Client
		}{{"tenant", tenant}, {"app", app}} {
			By("as " + who.name)
			c, n := who.c, func(s string) string { return who.name + "-" + s }
			ingress := func(name, h string, annotations map[string]string) *networkingv1.Ingress {
				return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n(name), Annotations: annotations},
					Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: h}}}}
			}
			deniedBy(c.Create(ctx, ingress("phish", "login.bank.example.com", nil)), catalyst.PolicyHosts,
				"Ingress host login.bank.example.com not under the environment's host "+host)
			Expect(c.Create(ctx, ingress("own", "api."+host, nil))).To(Succeed(), "the control: a host under the environment's")
			deniedBy(c.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n("tls")},
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}},
					TLS: []networkingv1.IngressTLS{{Hosts: []string{"*." + host, "bank.example.com"}}}}}),
				catalyst.PolicyHosts, "Ingress TLS host bank.example.com not under")

			deniedBy(c.Create(ctx, ingress("snippet", "snip."+host, map[string]string{"nginx.ingress.kubernetes.io/configuration-snippet": "return 200;"})),
				catalyst.PolicyHosts, "annotation nginx.ingress.kubernetes.io/configuration-snippet writes the shared ingress controller's configuration")
			Expect(c.Create(ctx, ingress("snippet", "snip."+host, map[string]string{"nginx.ingress.kubernetes.io/rewrite-target": "/"}))).To(Succeed())
			deniedBy(c.Create(ctx, ingress("shim", "shim."+host, map[string]string{"cert-manager.io/cluster-issuer": "evil"})),
				catalyst.PolicyHosts, "ClusterIssuer evil is not one the environment may use (allowed: "+catalysttest.Issuer+")")
			Expect(c.Create(ctx, ingress("shim", "shim."+host, map[string]string{"cert-manager.io/cluster-issuer": catalysttest.Issuer}))).To(Succeed())

			cert := func(name, issuer string, names ...string) *cmv1.Certificate {
				return &cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n(name)}, Spec: cmv1.CertificateSpec{
					SecretName: n(name), DNSNames: names, IssuerRef: cmmeta.ObjectReference{Kind: "ClusterIssuer", Name: issuer}}}
			}
			deniedBy(c.Create(ctx, cert("any", "evil", host)), catalyst.PolicyHosts, "ClusterIssuer evil is not an issuer the environment may use")
			deniedBy(c.Create(ctx, cert("bank", catalysttest.Issuer, "bank.example.com")), catalyst.PolicyHosts,
				"Certificate dnsName bank.example.com not under the environment's host "+host)
			Expect(c.Create(ctx, cert("own", catalysttest.Issuer, host, "*."+host))).To(Succeed())

			svc := func(name string, spec corev1.ServiceSpec) *corev1.Service {
				spec.Ports = []corev1.ServicePort{{Port: 80}}
				return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n(name)}, Spec: spec}
			}
			deniedBy(c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n("out")},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}}),
				catalyst.PolicyServices, "type ExternalName lets an Ingress reach any host")
			deniedBy(c.Create(ctx, svc("np", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort})), catalyst.PolicyServices, "type NodePort opens a port")
			deniedBy(c.Create(ctx, svc("ext", corev1.ServiceSpec{ExternalIPs: []string{"203.0.113.9"}})), catalyst.PolicyServices, "externalIPs")
			Expect(c.Create(ctx, svc("in", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}))).To(Succeed())

			pod := func(name, sa string) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n(name)}, Spec: restrictedPod(sa)}
			}
			deniedBy(c.Create(ctx, pod("borrow", catalyst.TenantServiceAccountName)), catalyst.PolicyIdentity,
				"ServiceAccount catalyst-deployer is the identity the operator deploys as")
			Expect(c.Create(ctx, pod("own", "app"))).To(Succeed())
			deploy := func(name, sa string) *appsv1.Deployment {
				l := map[string]string{"app": n(name)}
				return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n(name)}, Spec: appsv1.DeploymentSpec{
					Selector: &metav1.LabelSelector{MatchLabels: l},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: restrictedPod(sa)}}}
			}
			deniedBy(c.Create(ctx, deploy("borrow", catalyst.TenantServiceAccountName)), catalyst.PolicyIdentity, "catalyst-deployer")
			Expect(c.Create(ctx, deploy("own", "app"))).To(Succeed())
			token := func(name, sa string) *corev1.Secret {
				return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n(name),
					Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}}, Type: corev1.SecretTypeServiceAccountToken}
			}
			deniedBy(c.Create(ctx, token("stolen", catalyst.TenantServiceAccountName)), catalyst.PolicyIdentity,
				"service-account-token Secret for catalyst-deployer")
			Expect(c.Create(ctx, token("own", "app"))).To(Succeed())
		}

		By("nobody in the namespace may change what the policies read, nor mint the deployer's token")
		for _, c := range []client.Client{tenant, app} {
			err := c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"`+catalyst.HostAnnotation+`":"bank.example.com"}}}`)))
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		}
		tenantSet, err := kubernetes.NewForConfig(tenantConfig(testEnv.Config, ns))
		Expect(err).NotTo(HaveOccurred())
		_, err = tenantSet.CoreV1().ServiceAccounts(ns).CreateToken(ctx, catalyst.TenantServiceAccountName, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the tenant role grants no serviceaccounts/token: %v", err)
		_, err = clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, catalyst.TenantServiceAccountName, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred(), "the control: the administrator may")

		By("a namespace without the label is not bound: the same foreign Ingress is admitted there")
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "unbound-"}}
		Expect(k8s.Create(ctx, other)).To(Succeed())
		Expect(k8s.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: other.Name, Name: "phish"},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "login.bank.example.com"}}}})).To(Succeed())
	})
})
