package homelab

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/authentik"
	"github.com/platform-operator/platform-operator/internal/homelab/domain"
	"github.com/platform-operator/platform-operator/internal/homelab/homelabtest"
	"github.com/platform-operator/platform-operator/internal/homelab/redis/redistest"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
	"github.com/platform-operator/platform-operator/internal/testutil/standin"
)

// authentikCondition is an AuthentikServer's condition of type t for its current generation.
func authentikCondition(ns, name, t string) func() *metav1.Condition {
	return func() *metav1.Condition {
		var a homelabv1.AuthentikServer
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &a); err != nil || a.Status.ObservedGeneration != a.Generation {
			return nil
		}
		return meta.FindStatusCondition(a.Status.Conditions, t)
	}
}

func newAuthentikServer(ns, name string) *homelabv1.AuthentikServer {
	return homelabtest.AuthentikServer(ns, name)
}

// authentikDependencies makes, in namespace ns, the Domain "home" (its certificate issued), the
// RedisConnection "cache" on server and the PostgresDatabase "sso-db" on the suite's PostgreSQL server, and
// waits until each is Ready.
func makeAuthentikDependencies(ctx context.Context, ns string, server *redistest.Server) {
	d := newDomain(ns, "home", ns+".example.com")
	Expect(k8s.Create(ctx, d)).To(Succeed())
	Eventually(domainCondition(k8s, ns, "home", homelabv1.ConditionGateway)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))
	issue(ctx, client.ObjectKey{Namespace: testGatewayNamespace, Name: domain.ChildName(d)})

	createRedisConnection(ctx, ns, "cache", "cache-credentials", server.Port, "")

	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pg-admin"},
		Data: pg.SecretData(pg.User, pg.Password)})).To(Succeed())
	Expect(k8s.Create(ctx, homelabtest.PostgresConnection(ns, "pg", "pg-admin"))).To(Succeed())
	Expect(k8s.Create(ctx, homelabtest.PostgresDatabase(ns, "sso-db", "pg"))).To(Succeed())

	Eventually(domainCondition(k8s, ns, "home", homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonReady))
	Eventually(redisCondition(ns, "cache", homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonReady))
	Eventually(func() *metav1.Condition {
		var db homelabv1.PostgresDatabase
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sso-db"}, &db); err != nil {
			return nil
		}
		return meta.FindStatusCondition(db.Status.Conditions, homelabv1.ConditionReady)
	}).Should(And(Not(BeNil()), WithTransform(func(c *metav1.Condition) metav1.ConditionStatus { return c.Status }, Equal(metav1.ConditionTrue))))
}

// expectAuthentikRunning checks the children of a = AuthentikServer ns/name whose dependencies are Ready.
func expectAuthentikRunning(ctx context.Context, ns, name string) {
	a := newAuthentikServer(ns, name)
	for _, t := range []string{homelabv1.ConditionDomain, homelabv1.ConditionDatabase, homelabv1.ConditionRedis} {
		Eventually(authentikCondition(ns, name, t)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonReady), t)
	}
	Eventually(authentikCondition(ns, name, homelabv1.ConditionRoute)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))

	var secret corev1.Secret
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authentik.SecretName(a)}, &secret)).To(Succeed())
	for _, k := range authentik.SecretKeys {
		Expect(secret.Data).To(HaveKeyWithValue(k, Not(BeEmpty())), k)
	}
	for _, dn := range []string{authentik.ServerName(a), authentik.WorkerName(a)} {
		var d appsv1.Deployment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: dn}, &d)).To(Succeed())
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			Expect(e.Value).To(BeEmpty(), e.Name)
			Expect(e.ValueFrom.SecretKeyRef).NotTo(BeNil(), e.Name)
			Expect(e.ValueFrom.SecretKeyRef.Name).To(BeElementOf(authentik.SecretName(a), "sso-db-postgres", "cache-credentials"), e.Name)
		}
	}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authentik.ServiceName(a)}, &corev1.Service{})).To(Succeed())
	var vs istio.VirtualService
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authentik.VirtualServiceName(a)}, &vs)).To(Succeed())
	Expect(vs.Spec.Hosts).To(Equal([]string{"authentik." + ns + ".example.com"}))
	var d homelabv1.Domain
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "home"}, &d)).To(Succeed())
	Expect(vs.Spec.Gateways).To(Equal([]string{d.Status.Gateway}))
}

var _ = Describe("AuthentikServer", Ordered, func() {
	var server *redistest.Server
	BeforeAll(func(ctx SpecContext) {
		ensureGatewayNamespace(ctx)
		server = startRedis(redistest.Options{})
	})

	It("runs once its dependencies, made first, are Ready; is Ready with its pods; and then writes nothing", func(ctx SpecContext) {
		ns := newNamespace("authentik")
		makeAuthentikDependencies(ctx, ns, server)
		Expect(k8s.Create(ctx, newAuthentikServer(ns, "sso"))).To(Succeed())
		expectAuthentikRunning(ctx, ns, "sso")
		Expect(authentikCondition(ns, "sso", homelabv1.ConditionReady)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonDeploymentPending))

		a := newAuthentikServer(ns, "sso")
		Expect(standin.MarkDeploymentAvailable(ctx, k8s, ns, authentik.ServerName(a))).To(Succeed())
		Expect(standin.MarkDeploymentAvailable(ctx, k8s, ns, authentik.WorkerName(a))).To(Succeed())
		Eventually(authentikCondition(ns, "sso", homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonReady))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		Expect(a.Status.URL).To(Equal("https://authentik." + ns + ".example.com/"))
		Expect(a.Status.SecretName).To(Equal(authentik.SecretName(a)))

		// A dependency changing without changing anything authentik uses wakes it; nothing is written, and
		// the generated Secret keeps its values.
		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authentik.SecretName(a)}, &secret)).To(Succeed())
		before, rv := writes.In(ns), a.ResourceVersion
		var d homelabv1.Domain
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "home"}, &d)).To(Succeed())
		d.Annotations = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, &d)).To(Succeed())
		Consistently(func() int { return writes.In(ns) }).Should(Equal(before))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		Expect(a.ResourceVersion).To(Equal(rv))
		var after corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&secret), &after)).To(Succeed())
		Expect(after.Data).To(Equal(secret.Data))
		Expect(after.ResourceVersion).To(Equal(secret.ResourceVersion))
	})

	It("waits for dependencies created after it, then runs", func(ctx SpecContext) {
		ns := newNamespace("authentik")
		Expect(k8s.Create(ctx, newAuthentikServer(ns, "sso"))).To(Succeed())
		for _, t := range []string{homelabv1.ConditionDomain, homelabv1.ConditionDatabase, homelabv1.ConditionRedis} {
			Eventually(authentikCondition(ns, "sso", t)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonMissingDependency), t)
		}
		Expect(authentikCondition(ns, "sso", homelabv1.ConditionReady)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonMissingDependency))
		Expect(authentikCondition(ns, "sso", homelabv1.ConditionGeneratedSecret)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonWaitingForDependency))
		a := newAuthentikServer(ns, "sso")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authentik.SecretName(a)}, &corev1.Secret{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authentik.ServerName(a)}, &appsv1.Deployment{}))).To(BeTrue())

		// A Domain whose certificate is not issued yet exists but is not Ready.
		d := newDomain(ns, "home", ns+".example.com")
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(authentikCondition(ns, "sso", homelabv1.ConditionDomain)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonWaitingForDependency))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authentik.SecretName(a)}, &corev1.Secret{}))).To(BeTrue())

		Expect(k8s.Delete(ctx, d)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &homelabv1.Domain{}))
		}).Should(BeTrue())
		makeAuthentikDependencies(ctx, ns, server)
		expectAuthentikRunning(ctx, ns, "sso")
	})

	It("adds a key removed from the generated Secret and keeps the other values", func(ctx SpecContext) {
		ns := newNamespace("authentik")
		makeAuthentikDependencies(ctx, ns, server)
		a := newAuthentikServer(ns, "sso")
		Expect(k8s.Create(ctx, a)).To(Succeed())
		Eventually(authentikCondition(ns, "sso", homelabv1.ConditionGeneratedSecret)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonSecretGenerated))
		var secret corev1.Secret
		key := client.ObjectKey{Namespace: ns, Name: authentik.SecretName(a)}
		Expect(k8s.Get(ctx, key, &secret)).To(Succeed())
		kept := secret.DeepCopy().Data
		delete(secret.Data, authentik.BootstrapTokenKey)
		Expect(k8s.Update(ctx, &secret)).To(Succeed())
		Eventually(func() []byte {
			Expect(k8s.Get(ctx, key, &secret)).To(Succeed())
			return secret.Data[authentik.BootstrapTokenKey]
		}).ShouldNot(BeEmpty())
		Expect(secret.Data[authentik.SecretKeyKey]).To(Equal(kept[authentik.SecretKeyKey]))
		Expect(secret.Data[authentik.BootstrapPasswordKey]).To(Equal(kept[authentik.BootstrapPasswordKey]))
		Expect(secret.Data[authentik.BootstrapTokenKey]).NotTo(Equal(kept[authentik.BootstrapTokenKey]))
	})

	It("refuses a database in another namespace", func(ctx SpecContext) {
		ns := newNamespace("authentik")
		a := newAuthentikServer(ns, "sso")
		a.Spec.Database = "elsewhere/sso-db"
		Expect(k8s.Create(ctx, a)).To(Succeed())
		Eventually(authentikCondition(ns, "sso", homelabv1.ConditionDatabase)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonDependencyNotAllowed))
	})
})

// Admission: what the CRDs refuse, before any controller sees it (dry-run creates against the API server).
var _ = DescribeTable("admission of RedisConnection, Domain and AuthentikServer",
	func(ctx SpecContext, obj client.Object, wantRefusal string) {
		obj.SetNamespace("default")
		err := k8s.Create(ctx, obj, client.DryRunAll)
		if wantRefusal == "" {
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(wantRefusal))
	},
	Entry("a RedisConnection", newRedisConnection("", "cache", "cache-redis"), ""),
	Entry("a RedisConnection without a Secret", newRedisConnection("", "cache", ""), "spec.secret"),
	Entry("a RedisConnection naming an invalid Secret", newRedisConnection("", "cache", "Cache_Redis"), "spec.secret"),
	Entry("a Domain", newDomain("", "home", "home.example.com"), ""),
	Entry("a Domain with a single-label hostname", newDomain("", "home", "localhost"), "hostname must be a lowercase DNS name"),
	Entry("a Domain with a wildcard hostname", newDomain("", "home", "*.example.com"), "hostname must be a lowercase DNS name"),
	Entry("a Domain with an uppercase hostname", newDomain("", "home", "Home.Example.com"), "hostname must be a lowercase DNS name"),
	Entry("a Domain with a hostname too long for authentik.<hostname>", newDomain("", "home", strings.Repeat("a.", 122)+"com"), "spec.hostname"),
	Entry("a Domain without an issuer", &homelabv1.Domain{ObjectMeta: metav1.ObjectMeta{Name: "home"},
		Spec: homelabv1.DomainSpec{Hostname: "home.example.com"}}, "spec.issuer"),
	Entry("an AuthentikServer", newAuthentikServer("", "sso"), ""),
	Entry("an AuthentikServer with namespace/name references", &homelabv1.AuthentikServer{ObjectMeta: metav1.ObjectMeta{Name: "sso"},
		Spec: homelabv1.AuthentikServerSpec{Domain: "default/home", Database: "default/db", Redis: "default/cache"}}, ""),
	Entry("an AuthentikServer with a malformed reference", &homelabv1.AuthentikServer{ObjectMeta: metav1.ObjectMeta{Name: "sso"},
		Spec: homelabv1.AuthentikServerSpec{Domain: "a/b/c", Database: "db", Redis: "cache"}}, "spec.domain"),
	Entry("an AuthentikServer whose name cannot prefix its children", newAuthentikServer("", strings.Repeat("a", 44)), "metadata.name must start with a letter"),
)
