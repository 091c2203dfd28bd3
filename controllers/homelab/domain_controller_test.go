package homelab

import (
	"context"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/domain"
	"github.com/platform-operator/platform-operator/internal/homelab/homelabtest"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/testutil/standin"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// testGatewayNamespace is the suite's gateway namespace (Options.GatewayNamespace).
const testGatewayNamespace = "homelab-gateways"

func init() {
	suiteOptionHooks = append(suiteOptionHooks, func(o *Options) { o.GatewayNamespace = testGatewayNamespace })
}

// ensureGatewayNamespace creates the gateway namespace once.
func ensureGatewayNamespace(ctx context.Context) {
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testGatewayNamespace}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

func newDomain(ns, name, hostname string) *homelabv1.Domain {
	return homelabtest.Domain(ns, name, hostname)
}

// domainCondition is a Domain's condition of type t for its current generation (nil when absent).
func domainCondition(c client.Client, ns, name, t string) func() *metav1.Condition {
	return func() *metav1.Condition {
		var d homelabv1.Domain
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil || d.Status.ObservedGeneration != d.Generation {
			return nil
		}
		return meta.FindStatusCondition(d.Status.Conditions, t)
	}
}

// issue plays cert-manager signing the Certificate key (standin), once the Domain has made it.
func issue(ctx context.Context, key client.ObjectKey) {
	GinkgoHelper()
	Eventually(ctx, func() error { return standin.MarkCertificateReady(ctx, k8s, key.Namespace, key.Name) }).Should(Succeed())
}

var _ = Describe("Domain", func() {
	BeforeEach(func(ctx SpecContext) { ensureGatewayNamespace(ctx) })

	It("makes a Certificate and a Gateway in the gateway namespace, is Ready once the certificate is issued, and then writes nothing", func(ctx SpecContext) {
		ns := newNamespace("domain")
		d := newDomain(ns, "home", "served.example.com")
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(domainCondition(k8s, ns, "home", homelabv1.ConditionGateway)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))
		Expect(domainCondition(k8s, ns, "home", homelabv1.ConditionCertificate)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonCertificatePending))
		Expect(domainCondition(k8s, ns, "home", homelabv1.ConditionReady)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonCertificatePending))

		key := client.ObjectKey{Namespace: testGatewayNamespace, Name: domain.ChildName(d)}
		var cert cmv1.Certificate
		Expect(k8s.Get(ctx, key, &cert)).To(Succeed())
		Expect(cert.Spec.DNSNames).To(Equal([]string{"served.example.com", "*.served.example.com"}))
		Expect(cert.Spec.IssuerRef.Kind).To(Equal("ClusterIssuer"))
		Expect(cert.Labels).To(HaveKeyWithValue(domain.NamespaceLabel, ns))
		var gw istio.Gateway
		Expect(k8s.Get(ctx, key, &gw)).To(Succeed())
		Expect(gw.Spec.Servers).To(HaveLen(2))
		Expect(gw.Spec.Servers[0].TLS.CredentialName).To(Equal(cert.Spec.SecretName))
		Expect(gw.Spec.Servers[1].TLS.HTTPSRedirect).To(BeTrue())

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Finalizers).To(ContainElement(homelabv1.DomainFinalizer))
		Expect(d.Status.Gateway).To(Equal(testGatewayNamespace + "/" + domain.ChildName(d)))
		Expect(d.Status.CertificateSecret).To(Equal(testGatewayNamespace + "/" + domain.TLSSecretName(d)))

		issue(ctx, key)
		Eventually(domainCondition(k8s, ns, "home", homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonReady))

		// The Certificate's status changing again wakes the Domain; nothing it owns changed, so nothing is
		// written, here or in the gateway namespace.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		rv, before, gwBefore := d.ResourceVersion, writes.In(ns), writes.In(testGatewayNamespace)
		Expect(k8s.Get(ctx, key, &cert)).To(Succeed())
		cert.Status.Conditions[0].Message = "renewed"
		Expect(k8s.Status().Update(ctx, &cert)).To(Succeed())
		Consistently(func() int { return writes.In(ns) }).Should(Equal(before))
		Expect(writes.In(testGatewayNamespace)).To(Equal(gwBefore))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.ResourceVersion).To(Equal(rv))
	})

	It("repairs a Gateway changed by hand", func(ctx SpecContext) {
		ns := newNamespace("domain")
		d := newDomain(ns, "home", "drift.example.com")
		Expect(k8s.Create(ctx, d)).To(Succeed())
		key := client.ObjectKey{Namespace: testGatewayNamespace, Name: domain.ChildName(d)}
		var gw istio.Gateway
		Eventually(func() error { return k8s.Get(ctx, key, &gw) }).Should(Succeed())
		gw.Spec.Servers[0].Hosts = []string{"evil.example.com"}
		Expect(k8s.Update(ctx, &gw)).To(Succeed())
		Eventually(func() []string {
			Expect(k8s.Get(ctx, key, &gw)).To(Succeed())
			return gw.Spec.Servers[0].Hosts
		}).Should(Equal([]string{"drift.example.com", "*.drift.example.com"}))
	})

	It("deletes its Certificate and its Gateway when deleted, hands the certificate's Secret to the garbage collector, and touches nothing that is not its own", func(ctx SpecContext) {
		ns := newNamespace("domain")
		d := newDomain(ns, "home", "gone.example.com")
		Expect(k8s.Create(ctx, d)).To(Succeed())
		key := client.ObjectKey{Namespace: testGatewayNamespace, Name: domain.ChildName(d)}
		Eventually(domainCondition(k8s, ns, "home", homelabv1.ConditionGateway)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))
		// The Secret cert-manager writes, labelled through the Certificate's secretTemplate.
		tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testGatewayNamespace, Name: domain.TLSSecretName(d), Labels: domain.Labels(d)},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
		Expect(k8s.Create(ctx, tls)).To(Succeed())
		// Another Domain's Gateway in the same namespace stays.
		other := newDomain(ns, "other", "other.example.com")
		Expect(k8s.Create(ctx, other)).To(Succeed())
		otherKey := client.ObjectKey{Namespace: testGatewayNamespace, Name: domain.ChildName(other)}
		Eventually(func() error { return k8s.Get(ctx, otherKey, &istio.Gateway{}) }).Should(Succeed())

		// Hostile: the other Domain's TLS Secret name carrying no labels of ours is someone else's.
		foreignTLS := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testGatewayNamespace, Name: domain.TLSSecretName(other)},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
		Expect(k8s.Create(ctx, foreignTLS)).To(Succeed())
		var cert cmv1.Certificate
		Expect(k8s.Get(ctx, key, &cert)).To(Succeed())

		Expect(k8s.Delete(ctx, d)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &homelabv1.Domain{}))
		}).Should(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &cmv1.Certificate{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &istio.Gateway{}))).To(BeTrue())
		// envtest runs no garbage collector: the Secret is still there, owned by the deleted Certificate,
		// which is what makes a cluster's garbage collector delete it (the operator has no delete on Secrets).
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tls), tls)).To(Succeed())
		Expect(tls.OwnerReferences).To(ConsistOf(HaveField("UID", cert.UID)))
		Expect(tls.OwnerReferences[0].Kind).To(Equal("Certificate"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreignTLS), foreignTLS)).To(Succeed())
		Expect(foreignTLS.OwnerReferences).To(BeEmpty())
		Expect(k8s.Get(ctx, otherKey, &istio.Gateway{})).To(Succeed())
		Expect(k8s.Get(ctx, otherKey, &cmv1.Certificate{})).To(Succeed())
	})

	It("leaves alone an object of its child's name that it did not make, and still lets the Domain go", func(ctx SpecContext) {
		ns := newNamespace("domain")
		d := newDomain(ns, "home", "taken.example.com")
		foreign := &cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: testGatewayNamespace, Name: domain.ChildName(d)},
			Spec: cmv1.CertificateSpec{SecretName: "someone-else", DNSNames: []string{"taken.example.com"},
				IssuerRef: cmmeta.ObjectReference{Name: "theirs"}}}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(domainCondition(k8s, ns, "home", homelabv1.ConditionCertificate)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonNameConflict))
		Expect(k8s.Delete(ctx, d)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &homelabv1.Domain{}))
		}).Should(BeTrue())
		var still cmv1.Certificate
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), &still)).To(Succeed())
		Expect(still.Spec.SecretName).To(Equal("someone-else"))
	})
})

// A cluster without cert-manager and Istio: a Domain says which API is missing, holds no finalizer, and
// goes when deleted.
var _ = Describe("Domain on a cluster without cert-manager and Istio", Ordered, func() {
	var (
		env    *testenv.Env
		c      client.Client
		cancel context.CancelFunc
	)
	BeforeAll(func() {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		var err error
		env, err = testenv.Start(testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		plainCaps, err := env.Discover()
		Expect(err).NotTo(HaveOccurred())
		// The operator's own backup API is served: its CRDs are the repository's.
		Expect(plainCaps).To(Equal(platform.Capabilities{Backups: true}))
		opts := testenv.ManagerOptions(nil)
		// This API server calls no webhook.
		opts.WebhookServer = &manager.DisabledWebhookServer{}
		testenv.RunManager(ctx, env.Config, opts, plainCaps, Group(suiteOptions()))
		DeferCleanup(func() {
			cancel()
			Expect(env.Stop()).To(Succeed())
		})
	})

	It("reports both missing APIs and holds no finalizer", func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plain-"}}
		Expect(c.Create(ctx, ns)).To(Succeed())
		d := newDomain(ns.Name, "home", "home.example.com")
		Expect(c.Create(ctx, d)).To(Succeed())
		Eventually(domainCondition(c, ns.Name, "home", homelabv1.ConditionCertificate)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonAPINotAvailable))
		Expect(domainCondition(c, ns.Name, "home", homelabv1.ConditionGateway)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonAPINotAvailable))
		ready := domainCondition(c, ns.Name, "home", homelabv1.ConditionReady)()
		Expect(ready).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonAPINotAvailable))
		Expect(ready.Message).To(And(ContainSubstring("cert-manager"), ContainSubstring("Istio")))
		Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Finalizers).To(BeEmpty())
		Expect(c.Delete(ctx, d)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(d), &homelabv1.Domain{}))
		}).Should(BeTrue())
	})
})
