package iot

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/broker"
)

func testBroker(servers int32, mod func(*iotv1.FleetBroker)) *iotv1.FleetBroker {
	b := &iotv1.FleetBroker{ObjectMeta: metav1.ObjectMeta{Namespace: "iot", Name: "fleet", UID: "u1"}, Spec: iotv1.FleetBrokerSpec{Servers: servers}}
	if mod != nil {
		mod(b)
	}
	return b
}

func TestBrokerChildren(t *testing.T) {
	tests := []struct {
		name         string
		b            *iotv1.FleetBroker
		routes       int
		pdb          bool
		url          string
		replicas     int32
		cert         bool
		svcType      corev1.ServiceType
		nodePort     int32
		maxFileStore int64
	}{
		{name: "one server", b: testBroker(1, nil), routes: 1, url: "nats://fleet.iot.svc:4222", replicas: 1,
			svcType: corev1.ServiceTypeClusterIP, maxFileStore: (10 << 30) / 10 * 9},
		{name: "three servers", b: testBroker(3, nil), routes: 3, pdb: true, url: "nats://fleet.iot.svc:4222", replicas: 3,
			svcType: corev1.ServiceTypeClusterIP, maxFileStore: (10 << 30) / 10 * 9},
		{name: "five servers, R3 by default", b: testBroker(5, nil), routes: 5, pdb: true, url: "nats://fleet.iot.svc:4222", replicas: 3,
			svcType: corev1.ServiceTypeClusterIP, maxFileStore: (10 << 30) / 10 * 9},
		{name: "five servers, R5, TLS, node port, 1Gi", b: testBroker(5, func(b *iotv1.FleetBroker) {
			b.Spec.JetStream.Replicas = ptr.To[int32](5)
			b.Spec.JetStream.Storage.Size = ptr.To(resource.MustParse("1Gi"))
			b.Spec.TLS = &iotv1.FleetBrokerTLS{IssuerRef: iotv1.BrokerIssuerRef{Name: "ca"}, DNSNames: []string{"nats.example.com"}}
			b.Spec.Service = iotv1.FleetBrokerService{Type: iotv1.ServiceNodePort, NodePort: ptr.To[int32](30422)}
		}), routes: 5, pdb: true, url: "tls://fleet.iot.svc:4222", replicas: 5, cert: true,
			svcType: corev1.ServiceTypeNodePort, nodePort: 30422, maxFileStore: (1 << 30) / 10 * 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			c := brokerServerConfig(b, "pw")
			if len(c.Routes) != tt.routes || !strings.HasPrefix(c.Routes[0], "fleet-0.fleet-cluster.iot.svc:6222") {
				t.Errorf("routes %v, want %d from fleet-0.fleet-cluster.iot.svc:6222", c.Routes, tt.routes)
			}
			if c.MaxFileStore != tt.maxFileStore {
				t.Errorf("max file store %d, want %d", c.MaxFileStore, tt.maxFileStore)
			}
			if (c.ClientTLS != nil) != tt.cert || (c.RouteTLS != nil && !c.RouteTLS.Verify) {
				t.Errorf("client TLS %v, route TLS %+v", c.ClientTLS, c.RouteTLS)
			}
			if got := brokerPDB(b) != nil; got != tt.pdb {
				t.Errorf("PDB %v, want %v", got, tt.pdb)
			}
			if got := brokerClientURL(b); got != tt.url {
				t.Errorf("client URL %q, want %q", got, tt.url)
			}
			if got := b.BucketReplicas(); got != tt.replicas {
				t.Errorf("bucket replicas %d, want %d", got, tt.replicas)
			}
			cert := brokerCertificate(b)
			if (cert != nil) != tt.cert {
				t.Fatalf("certificate %v, want %v", cert != nil, tt.cert)
			}
			if cert != nil && (!slices.Contains(cert.Spec.DNSNames, "*.fleet-cluster.iot.svc") || !slices.Contains(cert.Spec.DNSNames, "fleet.iot.svc") ||
				!slices.Contains(cert.Spec.DNSNames, "nats.example.com") || cert.Spec.SecretName != "fleet-tls") {
				t.Errorf("certificate names %v, secret %q", cert.Spec.DNSNames, cert.Spec.SecretName)
			}
			svc := brokerClientService(b)
			if svc.Spec.Type != tt.svcType || svc.Spec.Ports[0].NodePort != tt.nodePort || svc.Spec.Ports[0].Port != broker.ClientPort {
				t.Errorf("client Service %s node port %d", svc.Spec.Type, svc.Spec.Ports[0].NodePort)
			}
			sts := brokerStatefulSet(b, "d")
			if *sts.Spec.Replicas != b.Spec.Servers || sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().Cmp(b.StorageSize()) != 0 {
				t.Errorf("StatefulSet replicas %d, claim %v", *sts.Spec.Replicas, sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests)
			}
			hasTLS := slices.ContainsFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tls" })
			if hasTLS != tt.cert {
				t.Errorf("TLS volume %v, want %v", hasTLS, tt.cert)
			}
			for _, o := range []metav1.Object{sts, svc, brokerClusterService(b), brokerConfigSecret(b, "", "", "")} {
				if !metav1.IsControlledBy(o, b) {
					t.Errorf("%s is not controlled by the broker", o.GetName())
				}
			}
		})
	}
}

// The config digest ignores the preloaded accounts (a revocation) and sees everything else.
func TestBrokerConfigDigest(t *testing.T) {
	a, err := auth.Init()
	if err != nil {
		t.Fatal(err)
	}
	b := testBroker(3, nil)
	render := func(b *iotv1.FleetBroker, pw string) string {
		conf, err := broker.Render(brokerServerConfig(b, pw), a)
		if err != nil {
			t.Fatal(err)
		}
		return conf
	}
	base := render(b, "pw")
	userKey := "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"
	if err := a.Revoke(userKey, metav1.Now().Time); err != nil {
		t.Fatal(err)
	}
	revoked := render(b, "pw")
	if revoked == base {
		t.Fatal("control: the revocation did not change the configuration")
	}
	if brokerConfigDigest(revoked) != brokerConfigDigest(base) {
		t.Error("a new account JWT changes the digest: a revocation would roll the servers")
	}
	for name, other := range map[string]string{
		"route password": render(b, "pw2"),
		"servers":        render(testBroker(5, nil), "pw"),
		"tls": render(testBroker(3, func(b *iotv1.FleetBroker) {
			b.Spec.TLS = &iotv1.FleetBrokerTLS{IssuerRef: iotv1.BrokerIssuerRef{Name: "ca"}}
		}), "pw"),
	} {
		if brokerConfigDigest(other) == brokerConfigDigest(base) {
			t.Errorf("a change of %s keeps the digest: the servers would not restart for it", name)
		}
	}
}
