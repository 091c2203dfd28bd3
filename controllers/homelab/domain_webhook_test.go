package homelab

import (
	"context"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/domain"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
)

// teamANamespace is the one namespace the suite's policy lets claim names under team-a.test, and only
// with the ClusterIssuer letsencrypt; every namespace may claim names under example.com.
const (
	teamANamespace    = "homelab-team-a"
	testDomainPolicy  = "*=example.com; " + teamANamespace + "=team-a.test:letsencrypt"
	domainWebhookName = "vdomain.homelab.mortenolsen.pro"
)

func init() {
	suiteOptionHooks = append(suiteOptionHooks, func(o *Options) { o.DomainPolicy = mustParseDomainPolicy(testDomainPolicy) })
}

// ensureNamespace creates the namespace name once.
func ensureNamespace(ctx context.Context, name string) {
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// expectRefused asserts that err is the API server's refusal of an admission webhook, saying each of
// words.
func expectRefused(err error, words ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	for _, w := range words {
		Expect(err.Error()).To(ContainSubstring(w))
	}
}

// hasChildren says whether the Certificate or the Gateway the operator makes for d exists.
func hasChildren(ctx context.Context, d *homelabv1.Domain) func() bool {
	return func() bool {
		key := client.ObjectKey{Namespace: testGatewayNamespace, Name: domain.ChildName(d)}
		return !apierrors.IsNotFound(k8s.Get(ctx, key, &cmv1.Certificate{})) || !apierrors.IsNotFound(k8s.Get(ctx, key, &istio.Gateway{}))
	}
}

// updateDomain changes d's spec on the API server, retrying when the operator wrote it meanwhile (its
// finalizer, its status).
func updateDomain(ctx context.Context, d *homelabv1.Domain, change func(*homelabv1.Domain)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		change(d)
		return k8s.Update(ctx, d)
	})).To(Succeed())
}

// bypassDomainWebhook takes the Domain webhook out of the API server's configuration until the spec ends,
// as a cluster without it installed (or two Domains admitted in the same instant) would have it: what
// the controller alone decides. The cleanup puts it back and waits until the API server calls it again.
func bypassDomainWebhook(ctx context.Context) {
	var removed admissionregistrationv1.ValidatingWebhook
	var cfgName string
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var list admissionregistrationv1.ValidatingWebhookConfigurationList
		if err := k8s.List(ctx, &list); err != nil {
			return err
		}
		for _, c := range list.Items {
			for i, w := range c.Webhooks {
				if w.Name == domainWebhookName {
					removed, cfgName = w, c.Name
					c.Webhooks = append(c.Webhooks[:i:i], c.Webhooks[i+1:]...)
					return k8s.Update(ctx, &c)
				}
			}
		}
		return nil
	})).To(Succeed())
	Expect(cfgName).NotTo(BeEmpty(), "the suite installs the Domain webhook")
	DeferCleanup(func(ctx SpecContext) {
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := k8s.Get(ctx, client.ObjectKey{Name: cfgName}, &c); err != nil {
				return err
			}
			c.Webhooks = append(c.Webhooks, removed)
			return k8s.Update(ctx, &c)
		})).To(Succeed())
		probe := newDomain("default", "probe", "probe.not-in-the-policy.test")
		Eventually(func() error { return k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll) }).Should(
			WithTransform(apierrors.IsForbidden, BeTrue()), "the API server calls the Domain webhook again")
	})
	// The API server reads webhook configurations through an informer: wait until it no longer calls
	// the webhook.
	probe := newDomain("default", "probe", "probe.not-in-the-policy.test")
	Eventually(func() error { return k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll) }).Should(Succeed())
}

var _ = Describe("Domain hostname ownership", func() {
	BeforeEach(func(ctx SpecContext) { ensureGatewayNamespace(ctx) })

	It("refuses at admission a hostname another namespace claimed, a name its wildcard covers and a name whose wildcard covers it, and admits other names", func(ctx SpecContext) {
		owner, intruder := newNamespace("claims"), newNamespace("claims")
		Expect(k8s.Create(ctx, newDomain(owner, "shop", "shop.claims.example.com"))).To(Succeed())

		expectRefused(k8s.Create(ctx, newDomain(intruder, "shop", "shop.claims.example.com")),
			"spec.hostname", "shop.claims.example.com", "namespace "+owner)
		expectRefused(k8s.Create(ctx, newDomain(intruder, "sub", "a.shop.claims.example.com")),
			"spec.hostname", "*.shop.claims.example.com", "namespace "+owner)
		expectRefused(k8s.Create(ctx, newDomain(intruder, "parent", "claims.example.com")),
			"spec.hostname", "*.claims.example.com", "namespace "+owner)
		// The same namespace gets no second claim either: a hostname has one Domain.
		expectRefused(k8s.Create(ctx, newDomain(owner, "again", "shop.claims.example.com")), "namespace "+owner)

		// Positive controls: a sibling and a name two labels below share no certificate name.
		Expect(k8s.Create(ctx, newDomain(intruder, "sibling", "other.claims.example.com"))).To(Succeed())
		Expect(k8s.Create(ctx, newDomain(intruder, "deep", "x.y.shop.claims.example.com"))).To(Succeed())
		Eventually(domainCondition(k8s, intruder, "sibling", homelabv1.ConditionGateway)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))
		Eventually(domainCondition(k8s, owner, "shop", homelabv1.ConditionGateway)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))

		// The hostname is the claim: it cannot be changed afterwards, to a taken name or any other.
		var d homelabv1.Domain
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: intruder, Name: "sibling"}, &d)).To(Succeed())
		d.Spec.Hostname = "shop.claims.example.com"
		err := k8s.Update(ctx, &d)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("hostname is immutable"))
	})

	It("without the webhook, gives a later claim HostnameTaken naming the owner's namespace and makes nothing for it; the name passes on when the owner goes", func(ctx SpecContext) {
		ownerNS, parentNS, leafNS := newNamespace("race"), newNamespace("race"), newNamespace("race")
		owner := newDomain(ownerNS, "mid", "mid.race.example.com")
		Expect(k8s.Create(ctx, owner)).To(Succeed())
		Eventually(domainCondition(k8s, ownerNS, "mid", homelabv1.ConditionGateway)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))
		// creationTimestamp counts seconds: the later claims must be made in a later second than the owner.
		Eventually(func() bool { return time.Now().Add(-time.Second).After(owner.CreationTimestamp.Time) }).Should(BeTrue())

		bypassDomainWebhook(ctx)
		// race.example.com's wildcard would cover the owner's name; leaf.mid.race.example.com is under
		// the owner's wildcard. They do not overlap each other.
		parent := newDomain(parentNS, "parent", "race.example.com")
		leaf := newDomain(leafNS, "leaf", "leaf.mid.race.example.com")
		Expect(k8s.Create(ctx, parent)).To(Succeed())
		Expect(k8s.Create(ctx, leaf)).To(Succeed())

		for _, d := range []*homelabv1.Domain{parent, leaf} {
			Eventually(domainCondition(k8s, d.Namespace, d.Name, homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonHostnameTaken))
			ready := domainCondition(k8s, d.Namespace, d.Name, homelabv1.ConditionReady)()
			Expect(ready.Message).To(ContainSubstring("namespace " + ownerNS))
			Expect(domainCondition(k8s, d.Namespace, d.Name, homelabv1.ConditionGateway)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonHostnameTaken))
			Consistently(hasChildren(ctx, d)).Should(BeFalse(), "a Domain that lost its hostname makes no Certificate and no Gateway")
			Eventually(func() []corev1.Event {
				var events corev1.EventList
				Expect(k8s.List(ctx, &events, client.InNamespace(d.Namespace))).To(Succeed())
				return events.Items
			}).Should(ContainElement(And(
				HaveField("Reason", homelabv1.ReasonHostnameTaken), HaveField("Type", corev1.EventTypeWarning))))
		}
		// The owner keeps its name.
		Expect(domainCondition(k8s, ownerNS, "mid", homelabv1.ConditionGateway)()).To(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))

		// The owner goes: each of the others now holds the oldest claim to its names.
		Expect(k8s.Delete(ctx, owner)).To(Succeed())
		for _, d := range []*homelabv1.Domain{parent, leaf} {
			Eventually(domainCondition(k8s, d.Namespace, d.Name, homelabv1.ConditionGateway)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))
			Expect(hasChildren(ctx, d)()).To(BeTrue())
		}
	})
})

var _ = Describe("Domain policy (--homelab-domain-policy)", func() {
	BeforeEach(func(ctx SpecContext) {
		ensureGatewayNamespace(ctx)
		ensureNamespace(ctx, teamANamespace)
	})

	It("refuses at admission a hostname or an issuer the policy does not give the namespace, admits what it gives, and takes it back when the issuer changes", func(ctx SpecContext) {
		other := newNamespace("policy")
		expectRefused(k8s.Create(ctx, newDomain(other, "www", "www.team-a.test")), "namespace "+other, "example.com")
		expectRefused(k8s.Create(ctx, newDomain(teamANamespace, "corp", "corp.example.org")), "namespace "+teamANamespace)
		withOtherIssuer := newDomain(teamANamespace, "shop", "shop.team-a.test")
		withOtherIssuer.Spec.Issuer = "internal-ca"
		expectRefused(k8s.Create(ctx, withOtherIssuer), "ClusterIssuer internal-ca")

		// Positive control: the namespace the policy names, a name under its suffix, its issuer.
		d := newDomain(teamANamespace, "www", "www.team-a.test")
		Expect(k8s.Create(ctx, d)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, d))).To(Succeed()) })
		Eventually(domainCondition(k8s, teamANamespace, "www", homelabv1.ConditionGateway)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonApplied))
		Expect(hasChildren(ctx, d)()).To(BeTrue())

		// An update is not admitted by the webhook: the controller checks the new issuer, refuses it in
		// the status and removes what it made.
		updateDomain(ctx, d, func(d *homelabv1.Domain) { d.Spec.Issuer = "internal-ca" })
		Eventually(domainCondition(k8s, teamANamespace, "www", homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonDomainNotAllowed))
		Expect(domainCondition(k8s, teamANamespace, "www", homelabv1.ConditionReady)().Message).To(ContainSubstring("ClusterIssuer internal-ca"))
		Eventually(hasChildren(ctx, d)).Should(BeFalse())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Status.Gateway).To(BeEmpty())
	})
})

var _ = Describe("AuthentikServer and another namespace's Domain", func() {
	BeforeEach(func(ctx SpecContext) { ensureGatewayNamespace(ctx) })

	It("refuses a Domain that does not list the namespace in spec.allowedNamespaces, admits one that does, and stops when it no longer does", func(ctx SpecContext) {
		infra, team := newNamespace("infra"), newNamespace("team")
		d := newDomain(infra, "home", infra+".example.com")
		Expect(k8s.Create(ctx, d)).To(Succeed())

		a := newAuthentikServer(team, "sso")
		a.Spec.Domain = infra + "/home"
		expectRefused(k8s.Create(ctx, a.DeepCopy()), "spec.domain", "spec.allowedNamespaces", "namespace "+team)
		// A Domain that does not exist gets the same answer: no probing another namespace's names.
		missing := newAuthentikServer(team, "sso")
		missing.Spec.Domain = infra + "/nothing"
		expectRefused(k8s.Create(ctx, missing), "spec.domain", "does not exist or does not list namespace "+team)
		// Its own namespace's Domain is always allowed.
		own := newAuthentikServer(team, "own")
		Expect(k8s.Create(ctx, own)).To(Succeed())

		// Positive control: the Domain lists the namespace.
		updateDomain(ctx, d, func(d *homelabv1.Domain) { d.Spec.AllowedNamespaces = []string{team} })
		Eventually(func() error { return k8s.Create(ctx, a.DeepCopy()) }).Should(Succeed())
		Eventually(authentikCondition(team, "sso", homelabv1.ConditionDomain)).Should(And(Not(BeNil()),
			Not(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonDependencyNotAllowed))))

		// The Domain withdraws the allowance: the controller refuses the reference, naming the field.
		updateDomain(ctx, d, func(d *homelabv1.Domain) { d.Spec.AllowedNamespaces = nil })
		Eventually(authentikCondition(team, "sso", homelabv1.ConditionDomain)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonDependencyNotAllowed))
		Expect(authentikCondition(team, "sso", homelabv1.ConditionDomain)().Message).To(ContainSubstring("spec.allowedNamespaces"))
	})
})
