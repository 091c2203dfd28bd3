package iot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/broker"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// fakeBrokers stands in for the FleetBroker kind: brokers by namespace/name.
type fakeBrokers struct {
	mu sync.Mutex
	m  map[string]Broker
}

func (f *fakeBrokers) set(ns, name string, b *Broker) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b == nil {
		delete(f.m, ns+"/"+name)
		return
	}
	f.m[ns+"/"+name] = *b
}

func (f *fakeBrokers) Broker(_ context.Context, ns, name string) (Broker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.m[ns+"/"+name]
	if !ok {
		return Broker{}, apierrors.NewNotFound(schema.GroupResource{Group: "iot.nationtech.io", Resource: "fleetbrokers"}, name)
	}
	return b, nil
}

// fleetBroker is one FleetBroker as the operator runs it, in process: its authority in a Secret of the
// namespace, and a real nats-server booted from broker.Render's configuration of that authority (a
// FULL account resolver, the fleet's buckets created by the operator's user).
type fleetBroker struct {
	ns        string
	authority *auth.Authority
	srv       *server.Server
	url       string
}

func startFleetBroker(ctx context.Context, ns string, brokers *fakeBrokers) *fleetBroker {
	GinkgoHelper()
	a, err := auth.Init()
	Expect(err).NotTo(HaveOccurred())
	data, err := a.Data()
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-authority"}, Data: data})).To(Succeed())

	dir := GinkgoT().TempDir()
	GinkgoT().Setenv(broker.ServerNameVar, "fleet-0")
	conf, err := broker.Render(broker.Config{Client: "127.0.0.1:-1", StoreDir: filepath.Join(dir, "js"), ResolverDir: filepath.Join(dir, "jwt")}, a)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "nats.conf")
	Expect(os.WriteFile(path, []byte(conf), 0o600)).To(Succeed())
	opts, err := server.ProcessConfigFile(path)
	Expect(err).NotTo(HaveOccurred())
	opts.NoSigs = true
	srv, err := server.NewServer(opts)
	Expect(err).NotTo(HaveOccurred())
	go srv.Start()
	Expect(srv.ReadyForConnections(10 * time.Second)).To(BeTrue())
	DeferCleanup(srv.Shutdown)
	b := &fleetBroker{ns: ns, authority: a, srv: srv, url: srv.ClientURL()}

	// The operator's user creates the buckets, as the operator does on a broker.
	opCreds := writeCreds(mustIssue(a, auth.RoleOperator, auth.OperatorUser))
	nc, js, err := auth.Client{CredentialsFile: opCreds}.Dial(b.url)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nc.Close)
	_, err = store.Open(ctx, js, time.Minute)
	Expect(err).NotTo(HaveOccurred())

	brokers.set(ns, "fleet", &Broker{AuthoritySecret: "fleet-authority", URL: b.url, Servers: 1})
	return b
}

func mustIssue(a *auth.Authority, r auth.Role, name string) []byte {
	GinkgoHelper()
	creds, err := a.Issue(r, name, 0)
	Expect(err).NotTo(HaveOccurred())
	return creds
}

// writeCreds puts creds in a file of their own, as a device mounts its Secret's key.
func writeCreds(creds []byte) string {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "device.creds")
	Expect(auth.WriteCreds(path, creds)).To(Succeed())
	return path
}

// dial connects once with the credentials file, not reconnecting.
func dial(url, creds string, opts ...nats.Option) (*nats.Conn, error) {
	o, err := auth.Client{CredentialsFile: creds}.Options()
	if err != nil {
		return nil, err
	}
	return nats.Connect(url, append(append(o, nats.MaxReconnects(0), nats.Timeout(5*time.Second)), opts...)...)
}

// credsOf is the credentials the DeviceCredential's Secret holds, in a file.
func credsOf(ctx context.Context, dc *iotv1.DeviceCredential) string {
	GinkgoHelper()
	sec := &corev1.Secret{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: dc.Namespace, Name: dc.SecretNameOrDefault()}, sec)).To(Succeed())
	return writeCreds(sec.Data[CredsKey])
}

func getCredential(ctx context.Context, dc *iotv1.DeviceCredential) *iotv1.DeviceCredential {
	GinkgoHelper()
	got := &iotv1.DeviceCredential{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(dc), got)).To(Succeed())
	return got
}

// issued waits until dc is Ready with a user key, and returns it as read.
func issued(ctx context.Context, dc *iotv1.DeviceCredential) *iotv1.DeviceCredential {
	GinkgoHelper()
	var got *iotv1.DeviceCredential
	Eventually(func(g Gomega) {
		got = &iotv1.DeviceCredential{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(dc), got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, iotv1.ConditionReady)).To(BeTrue(), "conditions %+v", got.Status.Conditions)
		g.Expect(got.Status.UserKey).NotTo(BeEmpty())
	}).Should(Succeed())
	return got
}

// revokedIn says whether the authority Secret's account JWT revokes key.
func revokedIn(ctx context.Context, ns, key string) bool {
	GinkgoHelper()
	sec := &corev1.Secret{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-authority"}, sec)).To(Succeed())
	ac, err := jwt.DecodeAccountClaims(string(sec.Data[auth.AccountJWTFile]))
	Expect(err).NotTo(HaveOccurred())
	_, ok := ac.Revocations[key]
	return ok
}

var _ = Describe("DeviceCredential", Ordered, func() {
	var (
		brokers = &fakeBrokers{m: map[string]Broker{}}
		dcr     *DeviceCredentialReconciler
	)
	BeforeAll(func() {
		// Its own manager, with the DeviceCredential controller alone: the suite's runs the Deployments.
		dcr = &DeviceCredentialReconciler{Brokers: brokers, RevokeGiveUp: 3 * time.Second}
		ctx, stop := context.WithCancel(suiteCtx)
		DeferCleanup(stop)
		testenv.RunManager(ctx, testEnv.Config, testenv.ManagerOptions(nil), platform.Capabilities{},
			manager.NewGroup("iot-credentials", deviceCredentialRow(dcr)))
	})

	It("issues the device's credentials once into a Secret, and they act as the device on the broker's server", func(ctx SpecContext) {
		ns := newNamespace()
		b := startFleetBroker(ctx, ns, brokers)
		dc := newCredential(ns, "pi-17", "pi-17", map[string]iotv1.LabelValue{"site": "lyon"})
		dc.Spec.ExpiresAfter = &metav1.Duration{Duration: 24 * time.Hour}
		Expect(k8s.Create(ctx, dc)).To(Succeed())
		got := issued(ctx, dc)
		Expect(got.Status.SecretName).To(Equal("pi-17-creds"))
		Expect(got.Status.IssuedAt).NotTo(BeNil())
		Expect(got.Status.ExpiresAt).NotTo(BeNil())
		Expect(got.Status.ExpiresAt.Sub(got.Status.IssuedAt.Time)).To(Equal(24 * time.Hour))
		Expect(got.Finalizers).To(ContainElement(DeviceCredentialFinalizer))
		Expect(meta.FindStatusCondition(got.Status.Conditions, iotv1.ConditionRevoked)).To(HaveField("Status", metav1.ConditionFalse))

		creds := credsOf(ctx, got)
		key, name, role, err := auth.UserOf(mustRead(creds))
		Expect(err).NotTo(HaveOccurred())
		Expect([]string{key, name, string(role)}).To(Equal([]string{got.Status.UserKey, "pi-17", string(auth.RoleDevice)}))
		verifier, err := auth.NewVerifier(b.authority.AccountJWT)
		Expect(err).NotTo(HaveOccurred())
		token, err := auth.CredentialJWT(creds)
		Expect(err).NotTo(HaveOccurred())
		Expect(verifier.Labels("pi-17", token, time.Now())).To(Equal(map[string]string{"site": "lyon"}))

		By("the credentials connect as the device: its own heartbeat is written, another device's refused")
		nc, js, err := auth.Client{CredentialsFile: creds}.Dial(b.url, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		Expect(err).NotTo(HaveOccurred())
		defer nc.Close()
		st, err := store.Bind(ctx, js)
		Expect(err).NotTo(HaveOccurred())
		_, err = st.Heartbeat(ctx, "pi-17", 0)
		Expect(err).NotTo(HaveOccurred())
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err = st.Heartbeat(short, "pi-18", 0)
		Expect(err).To(HaveOccurred(), "another device's heartbeat")

		By("another reconcile (the Secret touched) issues nothing new and writes nothing")
		sec := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pi-17-creds"}, sec)).To(Succeed())
		before := sec.Data[CredsKey]
		reconciles := dcr.reconciles.Load()
		sec.Annotations = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, sec)).To(Succeed())
		Eventually(dcr.reconciles.Load).Should(BeNumerically(">", reconciles))
		Consistently(func(g Gomega) {
			again := getCredential(ctx, dc)
			g.Expect(again.ResourceVersion).To(Equal(got.ResourceVersion))
			g.Expect(again.Status.UserKey).To(Equal(got.Status.UserKey))
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pi-17-creds"}, sec)).To(Succeed())
			g.Expect(sec.Data[CredsKey]).To(Equal(before))
		}, 2*time.Second).Should(Succeed())
	})

	It("revokes on deletion: the server closes the device's connection and refuses the old credentials, while others connect", func(ctx SpecContext) {
		ns := newNamespace()
		b := startFleetBroker(ctx, ns, brokers)
		leaked := newCredential(ns, "pi-17", "pi-17", nil)
		other := newCredential(ns, "pi-18", "pi-18", nil)
		Expect(k8s.Create(ctx, leaked)).To(Succeed())
		Expect(k8s.Create(ctx, other)).To(Succeed())
		leakedKey := issued(ctx, leaked).Status.UserKey
		issued(ctx, other)
		leakedCreds, otherCreds := credsOf(ctx, leaked), credsOf(ctx, other)

		By("the control: before the deletion the same credentials connect")
		closed := make(chan struct{})
		live, err := dial(b.url, leakedCreds, nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		Expect(err).NotTo(HaveOccurred())
		defer live.Close()
		Expect(revokedIn(ctx, ns, leakedKey)).To(BeFalse())

		Expect(k8s.Delete(ctx, leaked)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(leaked), &iotv1.DeviceCredential{}))
		}).Should(BeTrue())
		Expect(revokedIn(ctx, ns, leakedKey)).To(BeTrue())
		_, err = dial(b.url, leakedCreds)
		Expect(errors.Is(err, nats.ErrAuthorization)).To(BeTrue(), "the revoked credentials: %v", err)
		Eventually(closed).Should(BeClosed(), "the server closes the revoked device's open connection")
		nc, err := dial(b.url, otherCreds)
		Expect(err).NotTo(HaveOccurred(), "another device's credentials")
		nc.Close()
		Expect(eventOf(ctx, ns, "pi-17", iotv1.EventRevoked)).To(ContainSubstring("fleet-0"))
	})

	It("keeps both revocations when two DeviceCredentials are deleted at once", func(ctx SpecContext) {
		ns := newNamespace()
		b := startFleetBroker(ctx, ns, brokers)
		names := []string{"dev-a", "dev-b", "dev-c"}
		keys, creds := map[string]string{}, map[string]string{}
		for _, n := range names {
			Expect(k8s.Create(ctx, newCredential(ns, n, n, nil))).To(Succeed())
		}
		for _, n := range names {
			dc := issued(ctx, newCredential(ns, n, n, nil))
			keys[n], creds[n] = dc.Status.UserKey, credsOf(ctx, dc)
		}
		for _, n := range names[:2] {
			Expect(k8s.Delete(ctx, newCredential(ns, n, n, nil))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			var list iotv1.DeviceCredentialList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
		}).Should(Succeed())
		for _, n := range names[:2] {
			Expect(revokedIn(ctx, ns, keys[n])).To(BeTrue(), "%s's revocation is in the authority Secret", n)
			_, err := dial(b.url, creds[n])
			Expect(errors.Is(err, nats.ErrAuthorization)).To(BeTrue(), "%s's credentials: %v", n, err)
		}
		By("the control: the one not deleted still connects")
		Expect(revokedIn(ctx, ns, keys["dev-c"])).To(BeFalse())
		nc, err := dial(b.url, creds["dev-c"])
		Expect(err).NotTo(HaveOccurred())
		nc.Close()
	})

	It("lands every one of eight revocations run at the same moment on one authority Secret", func(ctx SpecContext) {
		// Deletions a few milliseconds apart rarely overlap; eight revocations started together do,
		// so a write that did not check the Secret's resourceVersion would lose some.
		ns := newNamespace()
		startFleetBroker(ctx, ns, brokers)
		dc := newCredential(ns, "any", "any", nil)
		keys := make([]string, 8)
		for i := range keys {
			kp, err := nkeys.CreateUser()
			Expect(err).NotTo(HaveOccurred())
			keys[i], _ = kp.PublicKey()
		}
		var wg sync.WaitGroup
		errs := make([]error, len(keys))
		for i, key := range keys {
			wg.Go(func() { _, errs[i] = dcr.revoke(ctx, dc, key) })
		}
		wg.Wait()
		for i, key := range keys {
			Expect(errs[i]).NotTo(HaveOccurred())
			Expect(revokedIn(ctx, ns, key)).To(BeTrue(), "revocation %d is in the authority Secret", i)
		}
	})

	It("ends with the latest account on the server when an earlier revocation's push arrives last", func(ctx SpecContext) {
		// The server takes every pushed account JWT, an older one too. Revocation A writes the Secret,
		// then stalls before pushing; revocation B writes on top of it and pushes; A's push then arrives
		// with the older JWT. Both must still be refused: A pushes what the Secret holds after its push.
		ns := newNamespace()
		b := startFleetBroker(ctx, ns, brokers)
		dc := newCredential(ns, "any", "any", nil)
		credsA, credsB := mustIssue(b.authority, auth.RoleDevice, "dev-a"), mustIssue(b.authority, auth.RoleDevice, "dev-b")
		keyA, _, _, _ := auth.UserOf(credsA)
		keyB, _, _, _ := auth.UserOf(credsB)
		aWritten, bDone := make(chan struct{}), make(chan struct{})
		var once sync.Once
		dcr.beforePush = func(key string) {
			if key == keyA {
				once.Do(func() { close(aWritten); <-bDone })
			}
		}
		DeferCleanup(func() { dcr.beforePush = nil })
		errA := make(chan error, 1)
		go func() { _, err := dcr.revoke(ctx, dc, keyA); errA <- err }()
		Eventually(aWritten).Should(BeClosed())
		_, err := dcr.revoke(ctx, dc, keyB)
		Expect(err).NotTo(HaveOccurred())
		close(bDone)
		Eventually(errA).Should(Receive(BeNil()))
		for name, creds := range map[string][]byte{"dev-a": credsA, "dev-b": credsB} {
			_, err := dial(b.url, writeCreds(creds))
			Expect(errors.Is(err, nats.ErrAuthorization)).To(BeTrue(), "%s's revoked credentials: %v", name, err)
		}
	})

	It("revokes with spec.revoked and keeps the object as the record", func(ctx SpecContext) {
		ns := newNamespace()
		b := startFleetBroker(ctx, ns, brokers)
		dc := newCredential(ns, "pi", "pi", nil)
		Expect(k8s.Create(ctx, dc)).To(Succeed())
		got := issued(ctx, dc)
		creds := credsOf(ctx, got)
		nc, err := dial(b.url, creds)
		Expect(err).NotTo(HaveOccurred(), "the control")
		nc.Close()
		got.Spec.Revoked = true
		Expect(k8s.Update(ctx, got)).To(Succeed())
		Eventually(func(g Gomega) {
			now := getCredential(ctx, dc)
			g.Expect(meta.IsStatusConditionTrue(now.Status.Conditions, iotv1.ConditionRevoked)).To(BeTrue())
			g.Expect(meta.FindStatusCondition(now.Status.Conditions, iotv1.ConditionReady)).To(HaveField("Reason", iotv1.ReasonRevoked))
			g.Expect(now.Status.RevokedAt).NotTo(BeNil())
		}).Should(Succeed())
		_, err = dial(b.url, creds)
		Expect(errors.Is(err, nats.ErrAuthorization)).To(BeTrue(), "revoked credentials: %v", err)
		Expect(k8s.Delete(ctx, dc)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(dc), &iotv1.DeviceCredential{}))
		}).Should(BeTrue())
	})

	It("never takes over a Secret it did not make, and waits for a broker that is not there", func(ctx SpecContext) {
		ns := newNamespace()
		startFleetBroker(ctx, ns, brokers)
		theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-creds"}, StringData: map[string]string{"x": "theirs"}}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		taken := newCredential(ns, "taken", "pi", nil)
		Expect(k8s.Create(ctx, taken)).To(Succeed())
		nowhere := newCredential(ns, "nowhere", "pi", nil)
		nowhere.Spec.Broker = "missing"
		Expect(k8s.Create(ctx, nowhere)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(meta.FindStatusCondition(getCredential(ctx, taken).Status.Conditions, iotv1.ConditionReady)).To(
				And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reconcile.ReasonNameConflict)))
			g.Expect(meta.FindStatusCondition(getCredential(ctx, nowhere).Status.Conditions, iotv1.ConditionReady)).To(
				And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", iotv1.ReasonBrokerNotFound)))
		}).Should(Succeed())
		sec := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), sec)).To(Succeed())
		Expect(sec.Data).To(Equal(map[string][]byte{"x": []byte("theirs")}))
		Expect(sec.OwnerReferences).To(BeEmpty())
		Expect(getCredential(ctx, taken).Status.UserKey).To(BeEmpty())
		Expect(getCredential(ctx, taken).Finalizers).To(BeEmpty(), "nothing issued, nothing to hold")
	})

	It("lets a deleted DeviceCredential go with a Warning when its broker is gone", func(ctx SpecContext) {
		ns := newNamespace()
		startFleetBroker(ctx, ns, brokers)
		dc := newCredential(ns, "orphan", "pi", nil)
		Expect(k8s.Create(ctx, dc)).To(Succeed())
		issued(ctx, dc)
		brokers.set(ns, "fleet", nil)
		Expect(k8s.Delete(ctx, dc)).To(Succeed())
		Consistently(func() error {
			return k8s.Get(ctx, client.ObjectKeyFromObject(dc), &iotv1.DeviceCredential{})
		}, time.Second).Should(Succeed(), "held while the give-up has not passed")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(dc), &iotv1.DeviceCredential{}))
		}, 20*time.Second).Should(BeTrue())
		Expect(eventOf(ctx, ns, "orphan", iotv1.EventRevocationAbandoned)).To(ContainSubstring("gave up revoking"))
	})
})

func mustRead(path string) []byte {
	GinkgoHelper()
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// eventOf waits for the event with reason about the object named name, and returns its message.
func eventOf(ctx context.Context, ns, name, reason string) string {
	GinkgoHelper()
	var msg string
	Eventually(func(g Gomega) {
		var events corev1.EventList
		g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		found := false
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				msg, found = e.Message, true
			}
		}
		g.Expect(found).To(BeTrue(), "event %s about %s", reason, name)
	}).Should(Succeed())
	return msg
}
