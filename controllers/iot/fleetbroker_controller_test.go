package iot

import (
	"os"
	"path/filepath"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/nats-io/nats-server/v2/server"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/broker"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// newBroker is a FleetBroker of servers servers, as a user writes it (the API server fills the defaults).
func newBroker(ns, name string, servers int32) *iotv1.FleetBroker {
	return &iotv1.FleetBroker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: iotv1.FleetBrokerSpec{Servers: servers}}
}

func getSecret(ctx SpecContext, ns, name string) *corev1.Secret {
	GinkgoHelper()
	var s corev1.Secret
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)).To(Succeed())
	return &s
}

// secretData is a Secret's data, nil while it does not exist: for Eventually.
func secretData(ctx SpecContext, ns, name string) map[string][]byte {
	var s corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		return nil
	}
	return s.Data
}

func brokerCondition(ctx SpecContext, b *iotv1.FleetBroker, t string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		var live iotv1.FleetBroker
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), &live)).To(Succeed())
		c := meta.FindStatusCondition(live.Status.Conditions, t)
		if c == nil {
			return &metav1.Condition{}
		}
		return c
	}
}

// parseBrokerConf reads a config Secret's nats.conf with nats-server's own parser, as server name name.
func parseBrokerConf(conf []byte, name string) (*server.Options, error) {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "nats.conf")
	Expect(os.WriteFile(path, conf, 0o600)).To(Succeed())
	GinkgoT().Setenv(broker.ServerNameVar, name)
	return server.ProcessConfigFile(path)
}

var _ = Describe("FleetBroker admission", func() {
	It("refuses server counts that cannot form a cluster and replica counts above the servers", func(ctx SpecContext) {
		ns := newNamespace()
		create := func(b *iotv1.FleetBroker) error { return k8s.Create(ctx, b, client.DryRunAll) }
		By("the control: 1, 3 and 5 servers, with and without replicas, are accepted")
		for _, n := range []int32{1, 3, 5} {
			Expect(create(newBroker(ns, "ok", n))).To(Succeed(), "servers %d", n)
		}
		b := newBroker(ns, "ok", 5)
		b.Spec.JetStream.Replicas = ptr.To[int32](5)
		Expect(create(b)).To(Succeed())
		b = newBroker(ns, "ok", 3)
		b.Spec.JetStream.Replicas = ptr.To[int32](1)
		Expect(create(b)).To(Succeed())

		By("even counts and others are refused")
		for _, n := range []int32{2, 4, 6, 7} {
			err := create(newBroker(ns, "bad", n))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "servers %d: %v", n, err)
			Expect(err.Error()).To(ContainSubstring("spec.servers"))
		}
		By("replicas above the servers are refused")
		for _, c := range []struct{ servers, replicas int32 }{{1, 3}, {3, 5}} {
			b := newBroker(ns, "bad", c.servers)
			b.Spec.JetStream.Replicas = ptr.To(c.replicas)
			err := create(b)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: %v", c, err)
			Expect(err.Error()).To(ContainSubstring("jetStream.replicas cannot exceed servers"))
		}
		By("a replica count of 2 is refused")
		b = newBroker(ns, "bad", 3)
		b.Spec.JetStream.Replicas = ptr.To[int32](2)
		Expect(apierrors.IsInvalid(create(b))).To(BeTrue())
		By("a node port with a ClusterIP Service is refused")
		b = newBroker(ns, "bad", 3)
		b.Spec.Service = iotv1.FleetBrokerService{Type: iotv1.ServiceClusterIP, NodePort: ptr.To[int32](30422)}
		Expect(apierrors.IsInvalid(create(b))).To(BeTrue())

		By("the sample in config/samples is admitted as written, strictly")
		raw, err := os.ReadFile("../../config/samples/iot_v1alpha1_fleetbroker.yaml")
		Expect(err).NotTo(HaveOccurred())
		sample := &iotv1.FleetBroker{}
		Expect(yaml.UnmarshalStrict(raw, sample)).To(Succeed())
		sample.Namespace = ns
		Expect(k8s.Create(ctx, sample, client.DryRunAll, client.FieldValidation("Strict"))).To(Succeed())

		By("the defaults: 3 servers, 10Gi, ClusterIP; storage does not change once made")
		b = &iotv1.FleetBroker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"}}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		Expect(b.Spec.Servers).To(BeEquivalentTo(3))
		Expect(b.Spec.JetStream.Storage.Size.String()).To(Equal("10Gi"))
		Expect(b.Spec.Service.Type).To(Equal(iotv1.ServiceClusterIP))
		Expect(b.BucketReplicas()).To(BeEquivalentTo(3))
		b.Spec.JetStream.Storage.Size = ptr.To(resource.MustParse("20Gi"))
		err = k8s.Update(ctx, b)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("storage cannot change"))
	})
})

var _ = Describe("FleetBroker", func() {
	It("makes the servers' StatefulSet, Services, PDB and Secrets, keeps the authority, and is Ready once every server is", func(ctx SpecContext) {
		ns := newNamespace()
		b := newBroker(ns, "fleet", 3)
		Expect(k8s.Create(ctx, b)).To(Succeed())
		key := client.ObjectKeyFromObject(b)

		// The disruption budget is the last child a reconcile applies: once it is there, so are the others.
		var pdb policyv1.PodDisruptionBudget
		Eventually(func() error { return k8s.Get(ctx, key, &pdb) }).Should(Succeed())
		var sts appsv1.StatefulSet
		Expect(k8s.Get(ctx, key, &sts)).To(Succeed())
		Expect(metav1.IsControlledBy(&sts, b)).To(BeTrue())

		By("the StatefulSet: 3 servers started in parallel, SERVER_NAME, mounts, claims, probes, restricted security")
		Expect(*sts.Spec.Replicas).To(BeEquivalentTo(3))
		Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement))
		Expect(sts.Spec.ServiceName).To(Equal("fleet-cluster"))
		pod := sts.Spec.Template.Spec
		Expect(pod.Containers).To(HaveLen(1))
		c := pod.Containers[0]
		Expect(c.Image).To(Equal(iotv1.DefaultBrokerImage))
		Expect(c.Args).To(Equal([]string{"--config", "/etc/nats/nats.conf"}))
		Expect(c.Env).To(ContainElement(And(HaveField("Name", broker.ServerNameVar), HaveField("ValueFrom.FieldRef.FieldPath", "metadata.name"))))
		Expect(c.VolumeMounts).To(ContainElements(
			And(HaveField("Name", "config"), HaveField("MountPath", "/etc/nats"), HaveField("ReadOnly", true)),
			And(HaveField("Name", "data"), HaveField("MountPath", "/data"))))
		Expect(pod.Volumes).To(ContainElement(And(HaveField("Name", "config"), HaveField("Secret.SecretName", "fleet-config"))))
		Expect(c.Ports).To(ConsistOf(HaveField("ContainerPort", int32(4222)), HaveField("ContainerPort", int32(6222)), HaveField("ContainerPort", int32(8222))))
		Expect(c.StartupProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/healthz?js-server-only=true"))
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz?js-enabled-only=true"))
		Expect(c.LivenessProbe.HTTPGet.Port.StrVal).To(Equal("monitor"))
		Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
		Expect(*pod.SecurityContext.RunAsUser).To(BeEquivalentTo(1000))
		Expect(*pod.SecurityContext.FSGroup).To(BeEquivalentTo(1000))
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
		Expect(c.SecurityContext.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
		Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))
		Expect(sts.Spec.VolumeClaimTemplates[0].Name).To(Equal("data"))
		Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("10Gi"))
		digest := sts.Spec.Template.Annotations[brokerConfigDigestAnnotation]
		Expect(digest).NotTo(BeEmpty())

		By("the Services and the disruption budget")
		var headless, clientSvc corev1.Service
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-cluster"}, &headless)).To(Succeed())
		Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(headless.Spec.PublishNotReadyAddresses).To(BeTrue())
		Expect(k8s.Get(ctx, key, &clientSvc)).To(Succeed())
		Expect(clientSvc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))

		By("the configuration, as nats-server reads it: three routes by pod DNS name, the authority's operator")
		authSecret := getSecret(ctx, ns, "fleet-authority")
		Expect(metav1.IsControlledBy(authSecret, b)).To(BeTrue())
		a, err := auth.FromData(authSecret.Data)
		Expect(err).NotTo(HaveOccurred())
		cfg := getSecret(ctx, ns, "fleet-config")
		o, err := parseBrokerConf(cfg.Data[BrokerConfigKey], "fleet-1")
		Expect(err).NotTo(HaveOccurred(), string(cfg.Data[BrokerConfigKey]))
		Expect(o.ServerName).To(Equal("fleet-1"))
		Expect(o.JetStream).To(BeTrue())
		Expect(o.StoreDir).To(Equal("/data/jetstream"))
		Expect(o.Cluster.Name).To(Equal("fleet"))
		var hosts []string
		for _, u := range o.Routes {
			hosts = append(hosts, u.Host)
		}
		Expect(hosts).To(ConsistOf(
			"fleet-0.fleet-cluster."+ns+".svc:6222", "fleet-1.fleet-cluster."+ns+".svc:6222", "fleet-2.fleet-cluster."+ns+".svc:6222"))
		opub, _ := a.Operator.PublicKey()
		Expect(o.TrustedOperators).To(HaveLen(1))
		Expect(o.TrustedOperators[0].Subject).To(Equal(opub))
		Expect(o.JetStreamMaxStore).To(BeEquivalentTo(int64(10<<30) / 10 * 9))

		By("the operator's credentials are the operator role's, valid for the authority")
		creds := getSecret(ctx, ns, "fleet-operator-creds").Data[BrokerCredentialsKey]
		_, name, role, err := auth.UserOf(creds)
		Expect(err).NotTo(HaveOccurred())
		Expect(role).To(Equal(auth.RoleOperator))
		Expect(name).To(Equal(auth.OperatorUser))
		Expect(credsIssuedBy(creds, a)).To(BeTrue())
		other, err := auth.Init()
		Expect(err).NotTo(HaveOccurred())
		Expect(credsIssuedBy(creds, other)).To(BeFalse(), "control: creds of one authority are not valid for another")

		By("the status: not Ready while no server is")
		Eventually(brokerCondition(ctx, b, iotv1.ConditionServers)).Should(HaveField("Reason", iotv1.ReasonServersNotReady))
		Expect(k8s.Get(ctx, key, b)).To(Succeed())
		Expect(b.Status.ClientURL).To(Equal("nats://fleet." + ns + ".svc:4222"))
		Expect(b.Status.AuthoritySecret).To(Equal("fleet-authority"))
		Expect(b.Status.OperatorCredentialsSecret).To(Equal("fleet-operator-creds"))
		Expect(b.Status.Replicas).To(BeEquivalentTo(3))
		Expect(meta.IsStatusConditionTrue(b.Status.Conditions, iotv1.ConditionReady)).To(BeFalse())

		By("a restarted operator (a reconciler with no memory) keeps every key and writes nothing")
		versions := func() []string {
			var out []string
			for _, n := range []string{"fleet-authority", "fleet-config", "fleet-operator-creds"} {
				out = append(out, getSecret(ctx, ns, n).ResourceVersion)
			}
			var s appsv1.StatefulSet
			Expect(k8s.Get(ctx, key, &s)).To(Succeed())
			return append(out, s.ResourceVersion)
		}
		before := versions()
		fresh := &FleetBrokerReconciler{Client: k8s, APIReader: k8s, Recorder: record.NewFakeRecorder(100)}
		fresh.init()
		_, err = fresh.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		Expect(err).NotTo(HaveOccurred())
		Expect(versions()).To(Equal(before))
		Expect(getSecret(ctx, ns, "fleet-authority").Data).To(Equal(authSecret.Data))
		Expect(getSecret(ctx, ns, "fleet-config").Data).To(Equal(cfg.Data))
		Expect(getSecret(ctx, ns, "fleet-operator-creds").Data[BrokerCredentialsKey]).To(Equal(creds))

		By("Ready once the StatefulSet reports every server ready")
		Expect(k8s.Get(ctx, key, &sts)).To(Succeed())
		sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.ObservedGeneration = 3, 3, sts.Generation
		Expect(k8s.Status().Update(ctx, &sts)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionReady)).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(k8s.Get(ctx, key, b)).To(Succeed())
		Expect(b.Status.ReadyServers).To(BeEquivalentTo(3))

		By("a spec change (a server count) keeps the authority and the route password")
		b.Spec.Servers = 5
		Expect(k8s.Update(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, &sts)).To(Succeed())
			g.Expect(*sts.Spec.Replicas).To(BeEquivalentTo(5))
		}).Should(Succeed())
		Expect(sts.Spec.Template.Annotations[brokerConfigDigestAnnotation]).NotTo(Equal(digest), "a new route list rolls the servers")
		Expect(getSecret(ctx, ns, "fleet-authority").Data).To(Equal(authSecret.Data))
		Expect(getSecret(ctx, ns, "fleet-config").Data[BrokerRoutePasswordKey]).To(Equal(cfg.Data[BrokerRoutePasswordKey]))
		Eventually(brokerCondition(ctx, b, iotv1.ConditionReady)).Should(HaveField("Status", metav1.ConditionFalse))
	})

	It("does not roll the servers for a new account JWT (a revocation)", func(ctx SpecContext) {
		ns := newNamespace()
		b := newBroker(ns, "fleet", 1)
		Expect(k8s.Create(ctx, b)).To(Succeed())
		key := client.ObjectKeyFromObject(b)
		var sts appsv1.StatefulSet
		Eventually(func() error { return k8s.Get(ctx, key, &sts) }).Should(Succeed())
		digest := sts.Spec.Template.Annotations[brokerConfigDigestAnnotation]
		oldConf := getSecret(ctx, ns, "fleet-config").Data[BrokerConfigKey]
		Expect(string(oldConf)).NotTo(ContainSubstring("cluster {"), "a single server has no routes")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &policyv1.PodDisruptionBudget{}))).To(BeTrue(), "one server has no disruption budget")

		By("revoking a device in the authority Secret, as fleet-auth revoke does")
		secret := getSecret(ctx, ns, "fleet-authority")
		a, err := auth.FromData(secret.Data)
		Expect(err).NotTo(HaveOccurred())
		device, err := a.Issue(auth.RoleDevice, "dev-1", 0)
		Expect(err).NotTo(HaveOccurred())
		userKey, _, _, err := auth.UserOf(device)
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Revoke(userKey, metav1.Now().Time)).To(Succeed())
		secret.Data[auth.AccountJWTFile] = []byte(a.AccountJWT)
		Expect(k8s.Update(ctx, secret)).To(Succeed())

		Eventually(func() []byte { return secretData(ctx, ns, "fleet-config")[BrokerConfigKey] }).Should(ContainSubstring(a.AccountJWT),
			"the config preloads the new account JWT (a restarted server knows the revocation)")
		Expect(k8s.Get(ctx, key, &sts)).To(Succeed())
		Expect(sts.Spec.Template.Annotations[brokerConfigDigestAnnotation]).To(Equal(digest))
		Expect(brokerConfigDigest(string(oldConf))).To(Equal(digest))
		Expect(brokerConfigDigest(strings.Replace(string(oldConf), "jetstream {", "jetstream {\n  max_memory_store: 1\n", 1))).NotTo(Equal(digest),
			"control: a change outside the preloaded accounts changes the digest")
	})

	It("reports a lost generated authority instead of making new keys", func(ctx SpecContext) {
		ns := newNamespace()
		b := newBroker(ns, "fleet", 1)
		Expect(k8s.Create(ctx, b)).To(Succeed())
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-config"}, &corev1.Secret{})
		}).Should(Succeed())
		old := getSecret(ctx, ns, "fleet-authority")
		Expect(k8s.Delete(ctx, old)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionAuthority)).Should(HaveField("Reason", iotv1.ReasonAuthorityLost))
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-authority"}, &corev1.Secret{}))
		}, "2s").Should(BeTrue())
		Expect(string(getSecret(ctx, ns, "fleet-config").Data[BrokerConfigKey])).To(ContainSubstring(string(old.Data[auth.OperatorJWTFile])),
			"the servers' configuration is kept")

		By("the documented escape: deleting the config Secret starts over with new keys")
		Expect(k8s.Delete(ctx, getSecret(ctx, ns, "fleet-config"))).To(Succeed())
		Eventually(func(g Gomega) {
			var s corev1.Secret
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-authority"}, &s)).To(Succeed())
			g.Expect(s.Data[auth.OperatorSeedFile]).NotTo(Equal(old.Data[auth.OperatorSeedFile]))
		}).Should(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionAuthority)).Should(HaveField("Reason", iotv1.ReasonAuthorityGenerated))
	})

	It("does not adopt a same-named Secret it did not make", func(ctx SpecContext) {
		ns := newNamespace()
		mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-authority"}, StringData: map[string]string{"x": "mine"}}
		Expect(k8s.Create(ctx, mine)).To(Succeed())
		b := newBroker(ns, "fleet", 1)
		Expect(k8s.Create(ctx, b)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionAuthority)).Should(HaveField("Reason", iotv1.ReasonBrokerNameConflict))
		s := getSecret(ctx, ns, "fleet-authority")
		Expect(s.Data).To(Equal(map[string][]byte{"x": []byte("mine")}))
		Expect(s.OwnerReferences).To(BeEmpty())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-config"}, &corev1.Secret{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(b), &appsv1.StatefulSet{}))).To(BeTrue())

		By("a same-named config Secret is not taken over either")
		ns2 := newNamespace()
		cfg := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "fleet-config"}, StringData: map[string]string{"nats.conf": "mine"}}
		Expect(k8s.Create(ctx, cfg)).To(Succeed())
		b2 := newBroker(ns2, "fleet", 1)
		Expect(k8s.Create(ctx, b2)).To(Succeed())
		Eventually(brokerCondition(ctx, b2, iotv1.ConditionBrokerConfig)).Should(HaveField("Reason", iotv1.ReasonBrokerNameConflict))
		Expect(getSecret(ctx, ns2, "fleet-config").Data).To(Equal(map[string][]byte{"nats.conf": []byte("mine")}))
	})

	It("uses a brought authority as given, and says when it is missing or unusable", func(ctx SpecContext) {
		ns := newNamespace()
		b := newBroker(ns, "fleet", 1)
		b.Spec.Authority.SecretName = "keys"
		Expect(k8s.Create(ctx, b)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionAuthority)).Should(HaveField("Reason", iotv1.ReasonAuthorityNotFound))

		bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keys"}, StringData: map[string]string{"operator.jwt": "nope"}}
		Expect(k8s.Create(ctx, bad)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionAuthority)).Should(HaveField("Reason", iotv1.ReasonAuthorityInvalid))

		a, err := auth.Init()
		Expect(err).NotTo(HaveOccurred())
		data, err := a.Data()
		Expect(err).NotTo(HaveOccurred())
		bad.StringData, bad.Data = nil, data
		Expect(k8s.Update(ctx, bad)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionAuthority)).Should(HaveField("Reason", iotv1.ReasonAuthorityProvided))
		Expect(getSecret(ctx, ns, "keys").Data).To(Equal(data), "the user's Secret is not changed")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-authority"}, &corev1.Secret{}))).To(BeTrue())
		Eventually(func() []byte { return secretData(ctx, ns, "fleet-config")[BrokerConfigKey] }).Should(ContainSubstring(a.OperatorJWT))
		Eventually(func(g Gomega) {
			var s corev1.Secret
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-operator-creds"}, &s)).To(Succeed())
			g.Expect(credsIssuedBy(s.Data[BrokerCredentialsKey], a)).To(BeTrue())
		}).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		Expect(b.Status.AuthoritySecret).To(Equal("keys"))
	})

	It("says cert-manager is missing for spec.tls, and serves tls:// URLs", func(ctx SpecContext) {
		ns := newNamespace()
		b := newBroker(ns, "fleet", 3)
		b.Spec.TLS = &iotv1.FleetBrokerTLS{IssuerRef: iotv1.BrokerIssuerRef{Name: "ca"}}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		Eventually(brokerCondition(ctx, b, iotv1.ConditionBrokerCertificate)).Should(HaveField("Reason", iotv1.ReasonBrokerAPINotAvailable))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		Expect(b.Status.ClientURL).To(Equal("tls://fleet." + ns + ".svc:4222"))
		Eventually(func() []byte { return secretData(ctx, ns, "fleet-config")[BrokerConfigKey] }).Should(ContainSubstring("/etc/nats/tls/ca.crt"))
		var sts appsv1.StatefulSet
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), &sts)).To(Succeed())
		Expect(sts.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "fleet-tls")))
	})
})

var _ = Describe("FleetBroker with cert-manager", func() {
	It("asks cert-manager for the servers' certificate, is Ready only once it is issued, and the connector trusts its CA", func(ctx SpecContext) {
		// The suite's manager started without cert-manager; this spec serves its Certificate API and runs
		// a reconciler that knows it is there.
		_, err := envtest.InstallCRDs(testEnv.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(testEnv.Root, "config", "crd", "external", "cert-manager.io_certificates.yaml")}})
		Expect(err).NotTo(HaveOccurred())
		ns := newNamespace()
		r := &FleetBrokerReconciler{Client: k8s, APIReader: k8s, Recorder: record.NewFakeRecorder(100), Capabilities: platform.Capabilities{CertManager: true}}
		r.init()
		b := newBroker(ns, "tlsfleet", 1)
		b.Spec.TLS = &iotv1.FleetBrokerTLS{IssuerRef: iotv1.BrokerIssuerRef{Name: "ca"}, DNSNames: []string{"nats.example.com"}}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		key := client.ObjectKeyFromObject(b)
		// The suite's manager reconciles it too, without cert-manager: its status writes may race ours,
		// so the spec reads the children and this reconciler's verdicts, not the stored status.
		reconcileOnce := func() {
			GinkgoHelper()
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func() error { reconcileOnce(); return k8s.Get(ctx, key, &cmv1.Certificate{}) }).Should(Succeed())
		var cert cmv1.Certificate
		Expect(k8s.Get(ctx, key, &cert)).To(Succeed())
		Expect(metav1.IsControlledBy(&cert, b)).To(BeTrue())
		Expect(cert.Spec.SecretName).To(Equal("tlsfleet-tls"))
		Expect(cert.Spec.IssuerRef.Name).To(Equal("ca"))
		Expect(cert.Spec.DNSNames).To(ContainElements("tlsfleet."+ns+".svc", "*.tlsfleet-cluster."+ns+".svc", "nats.example.com"))
		Expect(cert.Spec.Usages).To(ContainElements(cmv1.UsageServerAuth, cmv1.UsageClientAuth))

		By("issued: cert-manager's Ready condition and the Secret with ca.crt")
		cert.Status.Conditions = []cmv1.CertificateCondition{{Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionTrue, Reason: "Issued"}}
		Expect(k8s.Status().Update(ctx, &cert)).To(Succeed())
		const caPEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUJ6mIUdoY5VdYoFhQhbS0Bq8EBpQwCgYIKoZIzj0EAwIw\n-----END CERTIFICATE-----\n"
		tlsSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tlsfleet-tls"}, Data: map[string][]byte{"ca.crt": []byte(caPEM)}}
		Expect(k8s.Create(ctx, tlsSecret)).To(Succeed())
		// The StatefulSet comes from a later step of a reconcile than the Certificate: the one that made
		// the Certificate may have stopped before it (waiting for the authority the suite's manager was
		// writing at the same moment).
		var sts appsv1.StatefulSet
		Eventually(func() error { reconcileOnce(); return k8s.Get(ctx, key, &sts) }).Should(Succeed())
		sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.ObservedGeneration = 1, 1, sts.Generation
		Expect(k8s.Status().Update(ctx, &sts)).To(Succeed())
		s := r.newFleetBrokerScope(b)
		_, err = r.reconcileCertificate(ctx, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(meta.IsStatusConditionTrue(*s.Conditions, iotv1.ConditionBrokerCertificate)).To(BeTrue())

		By("the control: an unissued certificate is not ready")
		cert.Status.Conditions = []cmv1.CertificateCondition{{Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionFalse, Reason: "Pending", Message: "waiting for the issuer"}}
		Expect(k8s.Status().Update(ctx, &cert)).To(Succeed())
		s = r.newFleetBrokerScope(b)
		_, err = r.reconcileCertificate(ctx, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(meta.FindStatusCondition(*s.Conditions, iotv1.ConditionBrokerCertificate)).To(HaveField("Reason", iotv1.ReasonBrokerCertificatePending))

		By("the connector reads the CA of the broker's certificate")
		// Ready as this reconciler would find it; the suite's manager (no cert-manager) may write its own
		// verdict in between, so set and read again until the read sees it.
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, b)).To(Succeed())
			meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: iotv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"})
			b.Status.OperatorCredentialsSecret = "tlsfleet-operator-creds"
			g.Expect(k8s.Status().Update(ctx, b)).To(Succeed())
			o, err := resolveBroker(ctx, k8s, NATSOptions{Broker: &key})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(o.CA).To(Equal([]byte(caPEM)))
			g.Expect(o.URL).To(HavePrefix("tls://"))
		}).Should(Succeed())

		By("the control: without ca.crt the connector refuses to guess")
		tlsSecret.Data = map[string][]byte{"tls.crt": []byte(caPEM)}
		Expect(k8s.Update(ctx, tlsSecret)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, b)).To(Succeed())
			meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: iotv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"})
			b.Status.OperatorCredentialsSecret = "tlsfleet-operator-creds"
			g.Expect(k8s.Status().Update(ctx, b)).To(Succeed())
			_, err := resolveBroker(ctx, k8s, NATSOptions{Broker: &key})
			g.Expect(err).To(MatchError(ContainSubstring("has no ca.crt")))
		}).Should(Succeed())
	})
})
