package homelab

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// loginsOf counts the sessions the server authorized for user since offset (log_connections lines).
func loginsOf(user string, offset int64) int {
	log, err := pg.ReadLog()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	if int64(len(log)) < offset {
		return 0
	}
	return strings.Count(log[offset:], "connection authorized: user="+user+" ")
}

// touch asks for a reconcile of obj with an annotation the operator ignores.
func touch(obj client.Object, value string) {
	ctx := context.Background()
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	obj.SetAnnotations(map[string]string{"example.com/touch": value})
	ExpectWithOffset(1, k8s.Update(ctx, obj)).To(Succeed())
}

var _ = Describe("PostgreSQL admin sessions", func() {
	ctx := context.Background()

	It("logs in 0 times on an unchanged reconcile, and stops using a rotated Secret's login", func() {
		Expect(pg.LogConnections(ctx)).To(Succeed())
		ns := newNamespace("pgpool")
		conn, operator := readyConnection(ns, "main")
		db := readyDatabase(newDatabase(ns, "wiki", "main"))
		role := db.Status.DatabaseName

		offset := pg.LogSize()
		touch(db, "1")
		Eventually(sqlBy(operator, offset)).Should(ContainElement(ContainSubstring("pg_get_userbyid(datdba)")), "the reconcile did not read the server")
		Expect(loginsOf(operator, offset)).To(BeZero(), "an unchanged reconcile logged in as the operator")
		Expect(loginsOf(role, offset)).To(BeZero(), "an unchanged reconcile logged in as the database's role")

		// The connection's Secret is rotated: the next reconciles use the new login, and the old
		// login's sessions are closed.
		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: conn.Spec.Secret}, secret)).To(Succeed())
		old, err := postgres.SettingsFromSecret(secret.Data)
		Expect(err).NotTo(HaveOccurred())
		Expect(postgres.Sessions.Has(old)).To(BeTrue(), "no session kept for the connection's login")
		rotation := pg.LogSize()
		superuserExec(`ALTER ROLE ` + operator + ` PASSWORD 'rotated-password'`)
		secret.Data["password"] = []byte("rotated-password")
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		rotated, err := postgres.SettingsFromSecret(secret.Data)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool { return postgres.Sessions.Has(rotated) }).Should(BeTrue(), "the rotated login was not used")
		Expect(postgres.Sessions.Has(old)).To(BeFalse(), "the former login's sessions were kept")
		// The new login is in the server's log, which PostgreSQL may write a moment after the session opened.
		Eventually(func() int { return loginsOf(operator, rotation) }).Should(BeNumerically(">=", 1), "the rotated login was not logged")

		offset = pg.LogSize()
		touch(db, "2")
		Eventually(sqlBy(operator, offset)).Should(ContainElement(ContainSubstring("pg_get_userbyid(datdba)")))
		expectCondition(db, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
		Expect(postgres.Sessions.Has(old)).To(BeFalse(), "the former login was used again")
	})

	It("keeps a connection's sessions within its spec.maxSessions, and moves them when the budget changes", func() {
		ns := newNamespace("pgbudget")
		conn, _ := readyConnection(ns, "main")
		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: conn.Spec.Secret}, secret)).To(Succeed())
		settings, err := postgres.SettingsFromSecret(secret.Data)
		Expect(err).NotTo(HaveOccurred())
		// Without a budget, the default: the control for the checks below.
		Expect(postgres.Sessions.Has(settings)).To(BeTrue(), "no session kept for the connection's login")
		Expect(postgres.Sessions.HasWithin(settings, 6)).To(BeFalse())

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(conn), conn)).To(Succeed())
		conn.Spec.MaxSessions = ptr.To[int32](6)
		Expect(k8s.Update(ctx, conn)).To(Succeed())
		expectCondition(conn, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
		db := readyDatabase(newDatabase(ns, "wiki", "main"))
		Eventually(func() bool { return postgres.Sessions.HasWithin(settings, 6) }).Should(BeTrue(), "the budget of 6 was not used")
		Expect(postgres.Sessions.Has(settings)).To(BeFalse(), "the sessions of the default budget were kept")
		expectCondition(db, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
	})

	It("refuses a budget outside 1 to 64", func() {
		ns := newNamespace("pgbudgetbad")
		for _, n := range []int32{0, 65} {
			c := &homelabv1.PostgresConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b%d", n)},
				Spec: homelabv1.PostgresConnectionSpec{Secret: "x", MaxSessions: ptr.To(n)}}
			Expect(k8s.Create(ctx, c)).NotTo(Succeed(), "maxSessions %d was admitted", n)
		}
		ok := &homelabv1.PostgresConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"},
			Spec: homelabv1.PostgresConnectionSpec{Secret: "x", MaxSessions: ptr.To[int32](64)}}
		Expect(k8s.Create(ctx, ok)).To(Succeed())
	})
})
