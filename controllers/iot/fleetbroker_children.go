package iot

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/broker"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// The FleetBroker's children are built here by pure functions (no client, no context): the reconciler
// decides which exist and applies them.

// brokerApp is the app label of every child of a FleetBroker.
const brokerApp = "fleet-broker"

// Keys and paths of the broker's Secrets and volumes.
const (
	// BrokerConfigKey is the nats-server configuration in the config Secret.
	BrokerConfigKey = "nats.conf"
	// BrokerRoutePasswordKey is the servers' route password in the config Secret, made once and kept.
	BrokerRoutePasswordKey = "route-password"
	// BrokerCredentialsKey is the operator's .creds in the operator credentials Secret.
	BrokerCredentialsKey = "operator.creds"
	// BrokerRouteUser is the user the servers authenticate to each other as.
	BrokerRouteUser = "route"

	brokerConfigDir = "/etc/nats"
	brokerTLSDir    = "/etc/nats/tls"
	brokerDataDir   = "/data"
	// brokerUID is the fixed user (and group) the servers run as; the official image runs as root by
	// default, which the restricted pod security profile refuses.
	brokerUID = 1000
)

// Annotations the operator writes on the broker's children.
var (
	// brokerConfigDigestAnnotation, on the pod template, is a digest of the configuration without the
	// preloaded account JWTs: a change rolls the servers, a revocation (a new account JWT, pushed to the
	// running servers) does not.
	brokerConfigDigestAnnotation = oplabels.Annotation("broker-config-digest")
	// brokerOperatorKeyAnnotation, on the config Secret, is the public key of the operator (fleet-auth's
	// NATS operator) the servers trust: the evidence that they run with an authority, which makes a
	// generated authority Secret that disappears a loss to report rather than a Secret to make again.
	brokerOperatorKeyAnnotation = oplabels.Annotation("fleet-operator-key")
)

// Names of a broker's children.
func brokerAuthoritySecretName(b *iotv1.FleetBroker) string { return b.Name + "-authority" }
func brokerConfigSecretName(b *iotv1.FleetBroker) string    { return b.Name + "-config" }
func brokerCredsSecretName(b *iotv1.FleetBroker) string     { return b.Name + "-operator-creds" }
func brokerClusterServiceName(b *iotv1.FleetBroker) string  { return b.Name + "-cluster" }
func brokerTLSSecretName(b *iotv1.FleetBroker) string       { return b.Name + "-tls" }

// brokerAuthoritySecretOf is the authority Secret the broker uses: spec.authority.secretName or the
// generated one.
func brokerAuthoritySecretOf(b *iotv1.FleetBroker) string {
	if b.Spec.Authority.SecretName != "" {
		return b.Spec.Authority.SecretName
	}
	return brokerAuthoritySecretName(b)
}

// brokerClientURL is the URL clients in the cluster connect to.
func brokerClientURL(b *iotv1.FleetBroker) string {
	scheme := "nats"
	if b.Spec.TLS != nil {
		scheme = "tls"
	}
	return fmt.Sprintf("%s://%s.%s.svc:%d", scheme, b.Name, b.Namespace, broker.ClientPort)
}

// brokerRoutes are the route addresses of every server of the StatefulSet, by pod DNS name through the
// headless cluster Service.
func brokerRoutes(b *iotv1.FleetBroker) []string {
	routes := make([]string, 0, b.Spec.Servers)
	for i := range b.Spec.Servers {
		routes = append(routes, fmt.Sprintf("%s-%d.%s.%s.svc:%d", b.Name, i, brokerClusterServiceName(b), b.Namespace, broker.ClusterPort))
	}
	return routes
}

// brokerServerConfig is the broker.Config every server of b reads, with the route password.
func brokerServerConfig(b *iotv1.FleetBroker, routePassword string) broker.Config {
	c := broker.Config{
		Cluster:       b.Name,
		Client:        fmt.Sprintf("0.0.0.0:%d", broker.ClientPort),
		Route:         fmt.Sprintf("0.0.0.0:%d", broker.ClusterPort),
		Monitor:       fmt.Sprintf("0.0.0.0:%d", broker.MonitorPort),
		Routes:        brokerRoutes(b),
		RouteUser:     BrokerRouteUser,
		RoutePassword: routePassword,
		StoreDir:      brokerDataDir + "/jetstream",
		ResolverDir:   brokerDataDir + "/resolver",
	}
	// JetStream may fill 90% of the claim: the resolver's files and the server's own need the rest.
	if size := b.StorageSize(); size.Value() > 0 {
		size := size.Value()
		c.MaxFileStore = size / 10 * 9
	}
	if b.Spec.TLS != nil {
		c.ClientTLS = &broker.TLS{CertFile: brokerTLSDir + "/tls.crt", KeyFile: brokerTLSDir + "/tls.key"}
		c.RouteTLS = &broker.TLS{CertFile: brokerTLSDir + "/tls.crt", KeyFile: brokerTLSDir + "/tls.key", CAFile: brokerTLSDir + "/ca.crt", Verify: true}
	}
	return c
}

// brokerConfigDigest is a digest of a rendered configuration without its resolver_preload block (the
// account JWTs, which change on every revocation and reach running servers by a claims update): what the
// pod template carries, so that only a change the servers must restart for rolls them.
func brokerConfigDigest(conf string) string {
	if i := strings.Index(conf, "\nresolver_preload {"); i >= 0 {
		conf = conf[:i]
	}
	sum := sha256.Sum256([]byte(conf))
	return hex.EncodeToString(sum[:16])
}

func brokerMeta(b *iotv1.FleetBroker, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.Namespace, Labels: oplabels.Labels(brokerApp, b.Name),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, iotv1.GroupVersion.WithKind("FleetBroker"))}}
}

// brokerAuthoritySecret is the generated authority Secret holding data (auth.Authority.Data).
func brokerAuthoritySecret(b *iotv1.FleetBroker, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: brokerMeta(b, brokerAuthoritySecretName(b)),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// brokerConfigSecret is the servers' configuration, the route password it was rendered with, and the
// operator key it trusts.
func brokerConfigSecret(b *iotv1.FleetBroker, conf, routePassword, operatorKey string) *corev1.Secret {
	m := brokerMeta(b, brokerConfigSecretName(b))
	m.Annotations = map[string]string{brokerOperatorKeyAnnotation: operatorKey}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: m,
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{BrokerConfigKey: []byte(conf), BrokerRoutePasswordKey: []byte(routePassword)},
	}
}

// brokerCredsSecret is the operator's own credentials.
func brokerCredsSecret(b *iotv1.FleetBroker, creds []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: brokerMeta(b, brokerCredsSecretName(b)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{BrokerCredentialsKey: creds},
	}
}

// brokerClusterService is the headless Service that gives each server the DNS name its routes use; it
// publishes servers that are not ready, since a server becomes ready only once it found the others.
func brokerClusterService(b *iotv1.FleetBroker) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: brokerMeta(b, brokerClusterServiceName(b)),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 oplabels.SelectorLabels(brokerApp, b.Name),
			Ports: []corev1.ServicePort{
				{Name: "client", Port: broker.ClientPort, TargetPort: intstr.FromString("client"), Protocol: corev1.ProtocolTCP},
				{Name: "cluster", Port: broker.ClusterPort, TargetPort: intstr.FromString("cluster"), Protocol: corev1.ProtocolTCP},
				{Name: "monitor", Port: broker.MonitorPort, TargetPort: intstr.FromString("monitor"), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// brokerClientService is the Service clients connect to, of spec.service.type.
func brokerClientService(b *iotv1.FleetBroker) *corev1.Service {
	typ := corev1.ServiceType(b.Spec.Service.Type)
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	port := corev1.ServicePort{Name: "client", Port: broker.ClientPort, TargetPort: intstr.FromString("client"), Protocol: corev1.ProtocolTCP}
	if typ != corev1.ServiceTypeClusterIP && b.Spec.Service.NodePort != nil {
		port.NodePort = *b.Spec.Service.NodePort
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: brokerMeta(b, b.Name),
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: oplabels.SelectorLabels(brokerApp, b.Name),
			Ports:    []corev1.ServicePort{port},
		},
	}
}

// brokerCertificate is the servers' certificate: the client Service's names, every server's name on
// the cluster Service (the routes verify them), and spec.tls.dnsNames; nil without spec.tls. It serves
// both ends of a route, so it is good for client and server authentication.
func brokerCertificate(b *iotv1.FleetBroker) *cmv1.Certificate {
	if b.Spec.TLS == nil {
		return nil
	}
	kind := b.Spec.TLS.IssuerRef.Kind
	if kind == "" {
		kind = "Issuer"
	}
	svc, cluster := b.Name+"."+b.Namespace, brokerClusterServiceName(b)+"."+b.Namespace
	names := []string{b.Name, svc, svc + ".svc", svc + ".svc.cluster.local", "*." + cluster + ".svc", "*." + cluster + ".svc.cluster.local"}
	names = append(names, b.Spec.TLS.DNSNames...)
	return &cmv1.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cert-manager.io/v1", Kind: "Certificate"},
		ObjectMeta: brokerMeta(b, b.Name),
		Spec: cmv1.CertificateSpec{
			SecretName:     brokerTLSSecretName(b),
			SecretTemplate: &cmv1.CertificateSecretTemplate{Labels: oplabels.Labels(brokerApp, b.Name)},
			IssuerRef:      cmmeta.IssuerReference{Name: b.Spec.TLS.IssuerRef.Name, Kind: kind, Group: "cert-manager.io"},
			DNSNames:       names,
			Usages:         []cmv1.KeyUsage{cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment, cmv1.UsageServerAuth, cmv1.UsageClientAuth},
			PrivateKey:     &cmv1.CertificatePrivateKey{RotationPolicy: cmv1.RotationPolicyAlways},
		},
	}
}

// brokerPDB lets voluntary disruptions (a node drain) take one server at a time, so that a JetStream
// majority stays; nil for a single server, where it would only block drains.
func brokerPDB(b *iotv1.FleetBroker) *policyv1.PodDisruptionBudget {
	if b.Spec.Servers < 3 {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: brokerMeta(b, b.Name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: oplabels.SelectorLabels(brokerApp, b.Name)},
		},
	}
}

// brokerProbe is an HTTP probe of the monitor port.
func brokerProbe(path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("monitor")}},
		PeriodSeconds:    period,
		TimeoutSeconds:   5,
		FailureThreshold: failures,
	}
}

// brokerStatefulSet runs the servers: one pod and one claim per server, all started at once (a
// JetStream cluster forms only with a majority up), the configuration from the config Secret, and the
// digest of the configuration (brokerConfigDigest) on the pod template.
func brokerStatefulSet(b *iotv1.FleetBroker, configDigest string) *appsv1.StatefulSet {
	image := b.Spec.Image
	if image == "" {
		image = iotv1.DefaultBrokerImage
	}
	selector := oplabels.SelectorLabels(brokerApp, b.Name)
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: brokerConfigDir, ReadOnly: true},
		{Name: "data", MountPath: brokerDataDir},
	}
	volumes := []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: brokerConfigSecretName(b), Items: []corev1.KeyToPath{{Key: BrokerConfigKey, Path: BrokerConfigKey}}}}}}
	if b.Spec.TLS != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: "tls", MountPath: brokerTLSDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: brokerTLSSecretName(b)}}})
	}
	container := corev1.Container{
		Name:  "nats",
		Image: image,
		Args:  []string{"--config", brokerConfigDir + "/" + BrokerConfigKey},
		Env: []corev1.EnvVar{{Name: broker.ServerNameVar, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: broker.ClientPort, Protocol: corev1.ProtocolTCP},
			{Name: "cluster", ContainerPort: broker.ClusterPort, Protocol: corev1.ProtocolTCP},
			{Name: "monitor", ContainerPort: broker.MonitorPort, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts: mounts,
		// Started once JetStream is up and, clustered, current with the others (full healthz): a rolling
		// restart moves to the next server only after this one caught up, so a majority of every R3
		// bucket stays current. Up to 15 minutes for a large store to recover.
		StartupProbe: brokerProbe("/healthz", 10, 90),
		// Ready while the server serves clients, even when a JetStream majority is lost elsewhere: clients
		// then still reach it and see JetStream's own errors instead of a Service without endpoints.
		ReadinessProbe: brokerProbe("/healthz?js-server-only=true", 10, 3),
		// Restarted only when JetStream itself is down, never for catching up with the cluster.
		LivenessProbe: brokerProbe("/healthz?js-enabled-only=true", 30, 3),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	if b.Spec.Resources != nil {
		container.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList(b.Spec.Resources.Requests), Limits: corev1.ResourceList(b.Spec.Resources.Limits)}
	}
	claim := corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: oplabels.Labels(brokerApp, b.Name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: b.Spec.JetStream.Storage.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: b.StorageSize()}},
		},
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: brokerMeta(b, b.Name),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(b.Spec.Servers),
			ServiceName:         brokerClusterServiceName(b),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: oplabels.Labels(brokerApp, b.Name), Annotations: map[string]string{brokerConfigDigestAnnotation: configDigest}},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{container},
					Volumes:                       volumes,
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](60),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](brokerUID), RunAsGroup: ptr.To[int64](brokerUID),
						FSGroup: ptr.To[int64](brokerUID), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					// Spread the servers over nodes where the cluster can: two on one node fall together.
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
							TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
		},
	}
}
