package homelab

import (
	"context"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/authentik"
	"github.com/platform-operator/platform-operator/internal/homelab/domain"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// The refusals below are found again on every retry (ConflictRetry) and every recheck. Each test runs
// the step as successive reconciles do (each reading the status the one before wrote) and counts the
// Warning events: one for a refusal, none when the same refusal is found again, and, the control that
// shows the count can fail, one more when the refusal's message changes (another holder, another rule).

func TestDomainRefusalWarnsOnce(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := &DomainReconciler{Recorder: rec} // no cert-manager, no Istio: nothing to remove
	d := &homelabv1.Domain{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "www", Generation: 1},
		Spec: homelabv1.DomainSpec{Hostname: "www.example.com"}}
	refuse := func(msg string) {
		s := r.newDomainScope(d)
		if err := r.refuse(context.Background(), s, homelabv1.ReasonHostnameTaken, msg); err != nil {
			t.Fatal(err)
		}
		d.Status = *s.status // what the reconcile wrote, the next one reads
	}
	refuse("www.example.com is claimed by Domain team-a/www")
	testutil.WantWarnings(t, rec, "first refusal", 1)
	refuse("www.example.com is claimed by Domain team-a/www")
	testutil.WantWarnings(t, rec, "the same refusal found again", 0)
	refuse("www.example.com is claimed by Domain team-c/www")
	testutil.WantWarnings(t, rec, "control: another owner", 1)
}

func TestDomainNameConflictWarnsOnce(t *testing.T) {
	const gw = "istio-ingress"
	d := &homelabv1.Domain{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "www", Generation: 1},
		Spec: homelabv1.DomainSpec{Hostname: "www.example.com", Issuer: "letsencrypt"}}
	// A Certificate of d's name that the operator made for another Domain.
	holder := func(ns string) *cmv1.Certificate {
		c := domain.Certificate(&homelabv1.Domain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "www"}, Spec: d.Spec}, gw)
		c.Name = domain.ChildName(d)
		return c
	}
	rec := record.NewFakeRecorder(10)
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(holder("team-a")).Build()
	r := &DomainReconciler{Client: c, Recorder: rec, GatewayNamespace: gw}
	check := func() {
		s := r.newDomainScope(d)
		if _, ok, err := r.notOurs(context.Background(), s, &cmv1.Certificate{}, domain.Certificate(d, gw), homelabv1.ConditionCertificate); ok || err != nil {
			t.Fatalf("notOurs = %v, %v; want a conflict", ok, err)
		}
		d.Status = *s.status
	}
	check()
	testutil.WantWarnings(t, rec, "first conflict", 1)
	check()
	testutil.WantWarnings(t, rec, "the same conflict on the next retry", 0)
	r.Client = fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(holder("team-c")).Build()
	check()
	testutil.WantWarnings(t, rec, "control: another holder", 1)
}

func TestAuthentikSecretConflictWarnsOnce(t *testing.T) {
	a := &homelabv1.AuthentikServer{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "sso", Generation: 1}}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: authentik.SecretName(a)}}
	rec := record.NewFakeRecorder(10)
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(theirs).Build()
	r := &AuthentikServerReconciler{Client: c, APIReader: c, Recorder: rec}
	step := func() {
		s := r.newAuthentikServerScope(a)
		if _, err := r.reconcileGeneratedSecret(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		a.Status = *s.status
	}
	step()
	testutil.WantWarnings(t, rec, "first conflict", 1)
	step()
	testutil.WantWarnings(t, rec, "the same conflict on the next retry", 0)
	// Control: a status that no longer says it (the user cleared it, or another reason came between)
	// is told again.
	a.Status.Conditions = nil
	step()
	testutil.WantWarnings(t, rec, "control: a status that does not say it", 1)
}
