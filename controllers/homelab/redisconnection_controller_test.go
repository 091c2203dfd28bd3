package homelab

import (
	"context"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/homelabtest"
	"github.com/platform-operator/platform-operator/internal/homelab/redis/redistest"
)

// redisCondition is a RedisConnection's condition of type t as the API server has it (nil when absent).
func redisCondition(ns, name, t string) func() *metav1.Condition {
	return func() *metav1.Condition {
		var c homelabv1.RedisConnection
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return nil
		}
		if c.Status.ObservedGeneration != c.Generation {
			return nil
		}
		return meta.FindStatusCondition(c.Status.Conditions, t)
	}
}

// haveStatusReason matches a condition with the given status and reason.
func haveStatusReason(status metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(Not(BeNil()), WithTransform(func(c *metav1.Condition) string { return string(c.Status) + "/" + c.Reason },
		Equal(string(status)+"/"+reason)))
}

// redisSecret is a RedisConnection Secret for a server on 127.0.0.1:port.
func redisSecret(ns, name string, port int, password string) *corev1.Secret {
	data := map[string]string{"host": "127.0.0.1", "port": strconv.Itoa(port)}
	if password != "" {
		data["password"] = password
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

func newRedisConnection(ns, name, secret string) *homelabv1.RedisConnection {
	return homelabtest.RedisConnection(ns, name, secret)
}

// createRedisConnection creates RedisConnection name and its Secret secret (the server on 127.0.0.1:port,
// with password when not empty).
func createRedisConnection(ctx context.Context, ns, name, secret string, port int, password string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, redisSecret(ns, secret, port, password))).To(Succeed())
	Expect(k8s.Create(ctx, newRedisConnection(ns, name, secret))).To(Succeed())
}

// startRedis runs a real redis-server for the specs of the enclosing Ordered container and stops it after
// them.
func startRedis(opts redistest.Options) *redistest.Server {
	s, err := redistest.Start(opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(s.Stop)
	return s
}

var _ = Describe("RedisConnection", Ordered, func() {
	var open, locked *redistest.Server
	BeforeAll(func() {
		open = startRedis(redistest.Options{})
		locked = startRedis(redistest.Options{Password: "s3cret"})
	})

	It("is Ready when the server answers PING, and a reconcile of an unchanged connection writes nothing", func(ctx SpecContext) {
		ns := newNamespace("redis")
		createRedisConnection(ctx, ns, "cache", "redis", open.Port, "")
		Eventually(redisCondition(ns, "cache", homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonReady))
		Expect(redisCondition(ns, "cache", homelabv1.ConditionServer)()).To(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonConnected))
		var conn homelabv1.RedisConnection
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache"}, &conn)).To(Succeed())
		Expect(conn.Status.Address).To(Equal(open.Addr()))

		// A change to the Secret that changes nothing it says wakes the controller, which PINGs again and
		// finds nothing to write.
		before, rv := writes.In(ns), conn.ResourceVersion
		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis"}, &secret)).To(Succeed())
		secret.Annotations = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, &secret)).To(Succeed())
		Consistently(func() int { return writes.In(ns) }).Should(Equal(before))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache"}, &conn)).To(Succeed())
		Expect(conn.ResourceVersion).To(Equal(rv))
	})

	It("reports a wrong password, and is Ready once the Secret has the right one", func(ctx SpecContext) {
		ns := newNamespace("redis")
		createRedisConnection(ctx, ns, "cache", "redis", locked.Port, "wrong")
		Eventually(redisCondition(ns, "cache", homelabv1.ConditionServer)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonAuthenticationFailed))
		Expect(redisCondition(ns, "cache", homelabv1.ConditionReady)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonAuthenticationFailed))
		Expect(redisCondition(ns, "cache", homelabv1.ConditionServer)().Message).NotTo(ContainSubstring("wrong"))

		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "redis"}, &secret)).To(Succeed())
		secret.Data["password"] = []byte("s3cret")
		Expect(k8s.Update(ctx, &secret)).To(Succeed())
		Eventually(redisCondition(ns, "cache", homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonReady))
	})

	It("reports a server nobody listens for as Unreachable", func(ctx SpecContext) {
		ns := newNamespace("redis")
		port, err := redistest.ClosedPort()
		Expect(err).NotTo(HaveOccurred())
		createRedisConnection(ctx, ns, "cache", "redis", port, "")
		Eventually(redisCondition(ns, "cache", homelabv1.ConditionServer)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonUnreachable))
		Expect(redisCondition(ns, "cache", homelabv1.ConditionReady)()).To(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonUnreachable))
	})

	It("waits for a missing Secret and a Secret without a port, and connects when it is fixed", func(ctx SpecContext) {
		ns := newNamespace("redis")
		Expect(k8s.Create(ctx, newRedisConnection(ns, "cache", "redis"))).To(Succeed())
		Eventually(redisCondition(ns, "cache", homelabv1.ConditionSecret)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonSecretNotFound))
		Expect(redisCondition(ns, "cache", homelabv1.ConditionServer)()).To(BeNil())

		secret := redisSecret(ns, "redis", open.Port, "")
		delete(secret.StringData, "port")
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		Eventually(redisCondition(ns, "cache", homelabv1.ConditionSecret)).Should(haveStatusReason(metav1.ConditionFalse, homelabv1.ReasonSecretKeyMissing))

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		secret.Data["port"] = []byte(strconv.Itoa(open.Port))
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		Eventually(redisCondition(ns, "cache", homelabv1.ConditionReady)).Should(haveStatusReason(metav1.ConditionTrue, homelabv1.ReasonReady))
	})
})
