package homelab

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/homelabtest"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// loginCount numbers the operator logins specs make, so each spec's sessions carry a user name of their own
// in the server log.
var loginCount atomic.Int32

// newOperatorLogin makes a login on the suite's server with the given attributes ("CREATEROLE CREATEDB")
// and returns its name and password.
func newOperatorLogin(attributes string) (user, password string) {
	n := loginCount.Add(1)
	user, password = fmt.Sprintf("operator_%d", n), fmt.Sprintf("operator-password-%d", n)
	Expect(pg.CreateRole(context.Background(), user, password, attributes)).To(Succeed())
	return user, password
}

// newConnection creates, in ns, a Secret with data and a PostgresConnection named name reading it.
func newConnection(ns, name string, data map[string][]byte) *homelabv1.PostgresConnection {
	ctx := context.Background()
	if data != nil {
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-admin"}, Data: data})).To(Succeed())
	}
	c := homelabtest.PostgresConnection(ns, name, name+"-admin")
	Expect(k8s.Create(ctx, c)).To(Succeed())
	return c
}

// readyConnection is a Ready PostgresConnection in ns for a fresh login with CREATEROLE and CREATEDB.
func readyConnection(ns, name string) (*homelabv1.PostgresConnection, string) {
	user, password := newOperatorLogin("CREATEROLE CREATEDB")
	c := newConnection(ns, name, pg.SecretData(user, password))
	expectCondition(c, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
	return c, user
}

// conditionsOf reads obj anew and returns its conditions.
func conditionsOf(obj client.Object) []metav1.Condition {
	ExpectWithOffset(2, k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	switch o := obj.(type) {
	case *homelabv1.PostgresConnection:
		return o.Status.Conditions
	case *homelabv1.PostgresDatabase:
		return o.Status.Conditions
	}
	Fail(fmt.Sprintf("no conditions on %T", obj))
	return nil
}

// expectCondition waits until obj's condition t has status and reason for the object's current generation.
func expectCondition(obj client.Object, t string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	var got *metav1.Condition
	EventuallyWithOffset(1, func(g Gomega) {
		c := meta.FindStatusCondition(conditionsOf(obj), t)
		g.Expect(c).NotTo(BeNil(), "no %s condition", t)
		g.Expect(c.ObservedGeneration).To(Equal(obj.GetGeneration()))
		g.Expect(string(c.Status)+"/"+c.Reason).To(Equal(string(status)+"/"+reason), c.Message)
		got = c
	}).Should(Succeed())
	return got
}

// closedPort is a port on 127.0.0.1 nothing listens on.
func closedPort() string {
	ports, err := testutil.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprint(ports[0])
}

var _ = Describe("PostgresConnection", func() {
	ctx := context.Background()

	It("is Ready with a login holding CREATEROLE and CREATEDB, and reports the server's version", func() {
		ns := newNamespace("pgconn")
		c, _ := readyConnection(ns, "main")
		expectCondition(c, homelabv1.ConditionServer, metav1.ConditionTrue, homelabv1.ReasonConnected)
		Expect(c.Status.ServerVersion).To(HavePrefix("15"))
	})

	It("is Ready with a superuser", func() {
		ns := newNamespace("pgconn")
		c := newConnection(ns, "main", pg.SecretData(pg.User, pg.Password))
		expectCondition(c, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
	})

	It("says which Secret is missing, and becomes Ready when it appears", func() {
		ns := newNamespace("pgconn")
		c := newConnection(ns, "main", nil)
		expectCondition(c, homelabv1.ConditionSecret, metav1.ConditionFalse, homelabv1.ReasonSecretNotFound)
		expectCondition(c, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonSecretNotFound)
		user, password := newOperatorLogin("CREATEROLE CREATEDB")
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-admin"}, Data: pg.SecretData(user, password)})).To(Succeed())
		expectCondition(c, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
	})

	It("names the missing keys without showing a value", func() {
		ns := newNamespace("pgconn")
		data := pg.SecretData("someone", "hunter2-secret")
		delete(data, "host")
		delete(data, "port")
		c := newConnection(ns, "main", data)
		cond := expectCondition(c, homelabv1.ConditionSecret, metav1.ConditionFalse, homelabv1.ReasonSecretKeyMissing)
		Expect(cond.Message).To(ContainSubstring("missing keys host, port"))
		Expect(cond.Message).NotTo(ContainSubstring("hunter2"))
	})

	It("reports wrong credentials as AuthenticationFailed", func() {
		ns := newNamespace("pgconn")
		user, _ := newOperatorLogin("CREATEROLE CREATEDB")
		c := newConnection(ns, "main", pg.SecretData(user, "not-the-password"))
		cond := expectCondition(c, homelabv1.ConditionServer, metav1.ConditionFalse, homelabv1.ReasonAuthenticationFailed)
		Expect(cond.Message).NotTo(ContainSubstring("not-the-password"))
		expectCondition(c, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonAuthenticationFailed)
	})

	It("reports a server nobody answers on as Unreachable", func() {
		ns := newNamespace("pgconn")
		data := pg.SecretData(pg.User, pg.Password)
		data["port"] = []byte(closedPort())
		c := newConnection(ns, "main", data)
		expectCondition(c, homelabv1.ConditionServer, metav1.ConditionFalse, homelabv1.ReasonUnreachable)
	})

	It("reports a login without CREATEROLE as InsufficientPrivileges, and is Ready once it has it", func() {
		ns := newNamespace("pgconn")
		user, password := newOperatorLogin("CREATEDB")
		c := newConnection(ns, "main", pg.SecretData(user, password))
		cond := expectCondition(c, homelabv1.ConditionServer, metav1.ConditionFalse, homelabv1.ReasonInsufficientPrivileges)
		Expect(cond.Message).To(ContainSubstring("CREATEROLE"))
		Expect(cond.Message).NotTo(ContainSubstring("CREATEDB,"))

		// The fix lives on the server: a Secret change (here, an annotation) asks for a new check at once.
		conn, err := pg.Connect(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = conn.Exec(ctx, "ALTER ROLE "+user+" CREATEROLE")
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.Close(ctx)).To(Succeed())
		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "main-admin"}, secret)).To(Succeed())
		secret.Annotations = map[string]string{"touched": "now"}
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		expectCondition(c, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
	})

	It("is refused at admission without a Secret name", func() {
		ns := newNamespace("pgconn")
		c := homelabtest.PostgresConnection(ns, "bad", "Not_A_Name")
		err := k8s.Create(ctx, c)
		Expect(err).To(HaveOccurred())
		Expect(strings.ToLower(err.Error())).To(ContainSubstring("spec.secret"))
	})
})
