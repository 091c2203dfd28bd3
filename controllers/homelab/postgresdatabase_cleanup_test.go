package homelab

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// testCleanupTimeout is the suite's cleanup bound: long enough for the specs that watch a blocked cleanup
// and release it by hand, short enough that the spec of the bound itself is quick.
const testCleanupTimeout = 20 * time.Second

func init() {
	suiteOptionHooks = append(suiteOptionHooks, func(o *Options) { o.PostgresCleanupTimeout = testCleanupTimeout })
}

// eventsFor are the events of the object named name in ns with reason.
func eventsFor(ns, name, reason string) []corev1.Event {
	var list corev1.EventList
	ExpectWithOffset(1, k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

var _ = Describe("PostgresDatabase cleanup and claimed names", func() {
	ctx := context.Background()

	It("lets a deleted database go within the cleanup bound when its connection is gone, leaving the server untouched", func() {
		ns := newNamespace("pgdb")
		conn, _ := readyConnection(ns, "main")
		db := readyDatabase(newDatabase(ns, "orphan", "main"))
		name := db.Status.DatabaseName

		// The connection and its Secret go first (as in a namespace deletion): no way to the server is left.
		Expect(k8s.Delete(ctx, conn)).To(Succeed())
		Expect(k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: conn.Spec.Secret}})).To(Succeed())
		expectGone(conn)
		expectCondition(db, homelabv1.ConditionConnection, metav1.ConditionFalse, homelabv1.ReasonMissingDependency)

		Expect(k8s.Delete(ctx, db)).To(Succeed())
		deleted := time.Now()
		cond := expectCondition(db, homelabv1.ConditionCleanup, metav1.ConditionFalse, homelabv1.ReasonCleanupBlocked)
		Expect(cond.Message).To(ContainSubstring("PostgresConnection " + ns + "/main not found"))
		Expect(cond.Message).To(ContainSubstring(testCleanupTimeout.String()))
		Expect(cond.Message).To(ContainSubstring(homelabv1.AnnotationReleaseFinalizer))

		// Gone within the bound (and a retry's slack), not held forever.
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(db), db) }, testCleanupTimeout+20*time.Second).
			Should(Satisfy(func(err error) bool { return err != nil && client.IgnoreNotFound(err) == nil }))
		Expect(time.Since(deleted)).To(BeNumerically(">=", testCleanupTimeout-2*time.Second), "let go before the bound")
		Eventually(func() []corev1.Event { return eventsFor(ns, "orphan", homelabv1.ReasonCleanupAbandoned) }).ShouldNot(BeEmpty())
		Expect(eventsFor(ns, "orphan", homelabv1.ReasonCleanupAbandoned)[0].Type).To(Equal(corev1.EventTypeWarning))
		role, database := serverHas(name)
		Expect([]bool{role, database}).To(Equal([]bool{true, true}), "an abandoned cleanup touched the server")
	})

	It("says a derived name is taken when another namespace's object holds it, and makes the free names", func() {
		ns := newNamespace("pgdb")
		readyConnection(ns, "main")
		other := newNamespace("pgother")
		// A database of the name this namespace's "app" derives, commented as another namespace's object's.
		taken := postgres.Name(ns, "app")
		squatter := postgres.Owner{Kind: "PostgresDatabase", Namespace: other, Name: "app", UID: "uid-squatter"}
		superuserExec(fmt.Sprintf(`CREATE DATABASE %q`, taken))
		superuserExec(fmt.Sprintf(`COMMENT ON DATABASE %q IS '%s'`, taken, squatter.Comment()))

		db := newDatabase(ns, "app", "main")
		cond := expectCondition(db, homelabv1.ConditionDatabase, metav1.ConditionFalse, homelabv1.ReasonDatabaseClaimed)
		Expect(cond.Message).To(ContainSubstring(fmt.Sprintf("the name %q is taken", taken)))
		Expect(cond.Message).To(ContainSubstring(other + "/app"))
		expectCondition(db, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonDatabaseClaimed)
		// One Warning for the state, not one per retry.
		Eventually(func() []corev1.Event { return eventsFor(ns, "app", homelabv1.ReasonDatabaseClaimed) }).Should(HaveLen(1))
		Consistently(func() []corev1.Event { return eventsFor(ns, "app", homelabv1.ReasonDatabaseClaimed) }).Should(HaveLen(1))
		// The squatter's database is untouched: no role of ours, its comment unchanged.
		role, database := serverHas(taken)
		Expect([]bool{role, database}).To(Equal([]bool{false, true}))

		// Control: the same namespace and connection make a name nobody holds.
		readyDatabase(newDatabase(ns, "free", "main"))
	})

	It("gives a name two namespaces ask for to the first claimant, and the second a DatabaseClaimed naming it", func() {
		shared := newNamespace("pgshared")
		conn, _ := readyConnection(shared, "main")
		first, second := newNamespace("pgfirst"), newNamespace("pgsecond")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(conn), conn)).To(Succeed())
		conn.Spec.AllowedNamespaces = []string{first, second}
		Expect(k8s.Update(ctx, conn)).To(Succeed())
		wanted := "claimed_" + fmt.Sprint(time.Now().UnixNano())
		fixed := func(d *homelabv1.PostgresDatabase) { d.Spec.DatabaseName = wanted }

		winner := readyDatabase(newDatabase(first, "app", shared+"/main", fixed))
		loser := newDatabase(second, "app", shared+"/main", fixed)
		cond := expectCondition(loser, homelabv1.ConditionDatabase, metav1.ConditionFalse, homelabv1.ReasonDatabaseClaimed)
		Expect(cond.Message).To(ContainSubstring(fmt.Sprintf("the name %q is taken", wanted)))
		Expect(cond.Message).To(ContainSubstring(first + "/app"))
		_, _, err := loginWith(secretOf(winner).Data)
		Expect(err).NotTo(HaveOccurred(), "the loser disturbed the winner's login")

		// Control: the second namespace's own derived name is free.
		readyDatabase(newDatabase(second, "mine", shared+"/main"))
	})
})
