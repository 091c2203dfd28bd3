package homelab

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// namespacedReader lists only one namespace: the spec's collector counts the spec's objects alone, whatever
// the other specs left in the cluster.
type namespacedReader struct {
	client.Reader
	namespace string
}

func (r namespacedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Reader.List(ctx, list, append(opts, client.InNamespace(r.namespace))...)
}

// sample is the value of the series of family name whose labels include want (a histogram's sample count;
// several series add up; none is 0), from a gather of reg.
func sample(reg prometheus.Gatherer, name string, want map[string]string) float64 {
	GinkgoHelper()
	v, _, err := testutil.MetricValue(reg, name, want)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// The metrics of internal/kit/metrics as the operator registers them (opmetrics.Register), computed from the
// suite's real reconciles: the suite's manager runs the homelab controllers wrapped by opmetrics.Instrument.
var _ = Describe("metrics", Ordered, func() {
	var reg *prometheus.Registry
	var ns string
	BeforeAll(func() {
		ns = newNamespace("metrics")
		reg = prometheus.NewPedanticRegistry()
		Expect(opmetrics.Register(reg, namespacedReader{Reader: k8s, namespace: ns}, nil, opmetrics.PostgresConnection)).To(Succeed())
	})

	It("metrics: a PostgresConnection counts as not Ready, then as Ready once its Secret exists; its readiness is timed and its admin login counted", func(ctx SpecContext) {
		kind := map[string]string{"kind": "PostgresConnection"}
		notReady := map[string]string{"kind": "PostgresConnection", "ready": "False"}
		ready := map[string]string{"kind": "PostgresConnection", "ready": "True", "reason": homelabv1.ReasonReady}
		logins := map[string]string{"result": instruments.ResultSucceeded}

		By("before anything: every metric is there, at zero")
		Expect(sample(reg, "platform_operator_objects", map[string]string{"kind": "PostgresConnection", "reason": opmetrics.ReasonNoCondition})).To(BeZero())
		Expect(sample(reg, "platform_operator_objects_not_ready_seconds", kind)).To(BeZero())
		readyBefore := sample(reg, "platform_operator_ready_duration_seconds", kind)
		loginsBefore := sample(reg, "platform_operator_postgres_admin_logins_total", logins)

		By("a PostgresConnection whose Secret does not exist: not Ready, waiting for its Secret")
		conn := newConnection(ns, "metrics", nil)
		expectCondition(conn, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonSecretNotFound)
		Expect(sample(reg, "platform_operator_objects", notReady)).To(Equal(1.0))
		Expect(sample(reg, "platform_operator_objects", ready)).To(BeZero())
		Expect(sample(reg, "platform_operator_dependency_waits", map[string]string{"kind": "PostgresConnection", "dependency": "Secret"})).To(Equal(1.0))
		Expect(sample(reg, "platform_operator_ready_duration_seconds", kind)).To(Equal(readyBefore), "not Ready yet, nothing to time")

		By("its Secret is made: Ready, counted as such, and the time it took is recorded")
		user, password := newOperatorLogin("CREATEROLE CREATEDB")
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metrics-admin"},
			Data: pg.SecretData(user, password)})).To(Succeed())
		expectCondition(conn, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
		Expect(sample(reg, "platform_operator_objects", ready)).To(Equal(1.0))
		Expect(sample(reg, "platform_operator_objects", notReady)).To(BeZero())
		Expect(sample(reg, "platform_operator_objects_not_ready_seconds", kind)).To(BeZero())
		Expect(sample(reg, "platform_operator_dependency_waits", map[string]string{"kind": "PostgresConnection", "dependency": "Secret"})).To(BeZero())
		Expect(sample(reg, "platform_operator_ready_duration_seconds", kind)).To(BeNumerically(">", readyBefore))
		Expect(sample(reg, "platform_operator_postgres_admin_logins_total", logins)).To(BeNumerically(">", loginsBefore))
	})
})
