package iot

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/broker"
)

// freePort is a TCP port nothing listens on at 127.0.0.1.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startBrokerServer boots a real nats-server in this process from the nats.conf the operator wrote
// into the broker's config Secret, moved to 127.0.0.1 and a temporary directory (the only changes: the
// pod's addresses and /data do not exist here). It returns the client URL.
func startBrokerServer(conf []byte) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	port, monitor := freePort(), freePort()
	text := string(conf)
	for from, to := range map[string]string{
		strconv.Quote("0.0.0.0:" + strconv.Itoa(broker.ClientPort)):  strconv.Quote("127.0.0.1:" + strconv.Itoa(port)),
		strconv.Quote("0.0.0.0:" + strconv.Itoa(broker.MonitorPort)): strconv.Quote("127.0.0.1:" + strconv.Itoa(monitor)),
		`"/data/`: strconv.Quote(dir + "/")[:len(dir)+2],
	} {
		Expect(text).To(ContainSubstring(from))
		text = strings.ReplaceAll(text, from, to)
	}
	path := filepath.Join(dir, "nats.conf")
	Expect(os.WriteFile(path, []byte(text), 0o600)).To(Succeed())
	GinkgoT().Setenv(broker.ServerNameVar, "fleet-0")
	opts, err := server.ProcessConfigFile(path)
	Expect(err).NotTo(HaveOccurred())
	opts.NoSigs, opts.NoLog = true, true
	s, err := server.NewServer(opts)
	Expect(err).NotTo(HaveOccurred())
	go s.Start()
	DeferCleanup(s.Shutdown)
	Expect(s.ReadyForConnections(10 * time.Second)).To(BeTrue())
	return "nats://127.0.0.1:" + strconv.Itoa(port)
}

var _ = Describe("FleetBroker connector", func() {
	It("waits until the broker is Ready, then connects with the operator's credentials and the broker's replica count", func(ctx SpecContext) {
		ns := newNamespace()
		b := newBroker(ns, "fleet", 1)
		Expect(k8s.Create(ctx, b)).To(Succeed())
		key := client.ObjectKeyFromObject(b)
		var conf []byte
		Eventually(func(g Gomega) {
			var cfg corev1.Secret
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-config"}, &cfg)).To(Succeed())
			conf = cfg.Data[BrokerConfigKey]
			g.Expect(conf).NotTo(BeEmpty())
		}).Should(Succeed())
		url := startBrokerServer(conf)

		r := &DeploymentReconciler{NATS: &NATSOptions{Broker: &key, URL: url}, Recorder: record.NewFakeRecorder(1000), Client: k8s}
		cctx, stop := context.WithCancel(ctx)
		defer stop()
		done := make(chan error, 1)
		go func() { done <- (&natsConnector{r: r, reader: k8s}).Start(cctx) }()

		By("not Ready: the connector waits, though the server answers")
		Consistently(func() bool { return r.store.Load() == nil }, "3s").Should(BeTrue())

		By("Ready: it connects as the operator and opens the fleet's buckets")
		var sts appsv1.StatefulSet
		Expect(k8s.Get(ctx, key, &sts)).To(Succeed())
		sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.ObservedGeneration = 1, 1, sts.Generation
		Expect(k8s.Status().Update(ctx, &sts)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionReady)).Should(HaveField("Status", BeEquivalentTo("True")))
		Eventually(func() bool { return r.store.Load() != nil }, "30s").Should(BeTrue())
		st := r.store.Load()
		info, err := st.Desired.Status(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Bucket()).To(Equal(fleet.BucketDesired))
		Expect(info.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas).To(Equal(1))
		By("as the operator: the credentials' user is the operator's")
		Expect(st.Conn().ConnectedUrl()).To(Equal(url))
		stop()
		Eventually(done, "10s").Should(Receive(BeNil()))
	})

	It("resolves the broker's client URL, credentials and bucket replicas, and refuses a broker that is not Ready", func(ctx SpecContext) {
		ns := newNamespace()
		b := newBroker(ns, "fleet", 3)
		Expect(k8s.Create(ctx, b)).To(Succeed())
		key := client.ObjectKeyFromObject(b)
		Eventually(brokerCondition(ctx, b, iotv1.ConditionBrokerConfig)).Should(HaveField("Status", BeEquivalentTo("True")))
		_, err := resolveBroker(ctx, k8s, NATSOptions{Broker: &key})
		Expect(err).To(MatchError(errBrokerNotReady))

		var sts appsv1.StatefulSet
		Expect(k8s.Get(ctx, key, &sts)).To(Succeed())
		sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.ObservedGeneration = 3, 3, sts.Generation
		Expect(k8s.Status().Update(ctx, &sts)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionReady)).Should(HaveField("Status", BeEquivalentTo("True")))
		o, err := resolveBroker(ctx, k8s, NATSOptions{Broker: &key})
		Expect(err).NotTo(HaveOccurred())
		Expect(o.URL).To(Equal("nats://fleet." + ns + ".svc:4222"))
		Expect(o.Limits.Replicas).To(Equal(3))
		Expect(o.Credentials).To(Equal(getSecret(ctx, ns, "fleet-operator-creds").Data[BrokerCredentialsKey]))
		Expect(o.Redacted()).To(Equal("nats://fleet." + ns + ".svc:4222"))
		Expect(NATSOptions{Broker: &key}.Redacted()).To(Equal("FleetBroker " + key.String()))
	})
})
