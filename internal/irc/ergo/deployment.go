package ergo

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
)

// Options are the cluster facts the Deployment depends on.
type Options struct {
	// Image is the ergo image; DefaultImage when empty.
	Image string
	// OpenShift is true on OpenShift, whose restricted SCCs assign the uid, gid and fsGroup from the
	// namespace's range and reject pods that pin their own.
	OpenShift bool
	// LegacyDigestKey puts the config digest under LegacyConfigDigestAnnotation instead of
	// ConfigDigestAnnotation: the controller sets it while the running pod template has the same digest
	// under the legacy key, so that moving the annotation does not roll the pod.
	LegacyDigestKey bool
}

const (
	containerName = "ergo"
	ergoBinary    = "/ircd-bin/ergo"

	configVolume = "config"
	dataVolume   = "data"
	tmpVolume    = "tmp"

	// ergoUID runs ergo off OpenShift. ergo's Alpine-based Dockerfile sets no USER (run.sh writes
	// into /ircd as root), so without a number kubelet would refuse runAsNonRoot. 65532 is the
	// "nonroot" user of the Chainguard-based variant of that Dockerfile (COPY --chown=nonroot); in the
	// Alpine image any uid works because everything it ships is world-readable and -executable, and
	// fsGroup makes the PVC writable.
	ergoUID int64 = 65532
)

// Deployment runs one ergo. configDigest (ConfigDigest of the rendered config and the oper hash) goes on
// the pod template, so a new config or oper password rolls the pod; nothing else the operator computes
// does.
func Deployment(n *ircv1.ErgoNetwork, opts Options, configDigest string) *appsv1.Deployment {
	image := opts.Image
	if image == "" {
		image = DefaultImage
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: objectMeta(n, DeploymentName(n)),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(n)},
			// Two ergo processes must never open the same datastore: the old pod is gone before the
			// new one starts.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      Labels(n),
					Annotations: map[string]string{opts.digestKey(): configDigest},
				},
				Spec: podSpec(n, image, opts.OpenShift),
			},
		},
	}
}

func podSpec(n *ircv1.ErgoNetwork, image string, openShift bool) corev1.PodSpec {
	return corev1.PodSpec{
		// ergo never talks to the API server, and Service env vars would only be noise in its
		// environment, which allow-environment-overrides reads.
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		// ergo shuts down on SIGTERM at once; the default grace period is plenty and bounds how long
		// a Recreate rollout keeps the network down.
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		SecurityContext:               podSecurityContext(openShift),
		Containers:                    []corev1.Container{container(n, image)},
		Volumes:                       volumes(n),
	}
}

func podSecurityContext(openShift bool) *corev1.PodSecurityContext {
	return ircnet.PodSecurityContext(openShift, ergoUID)
}

func container(n *ircv1.ErgoNetwork, image string) corev1.Container {
	var ports []corev1.ContainerPort
	for _, p := range ServicePorts(n) {
		ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: corev1.ProtocolTCP})
	}
	c := corev1.Container{
		Name:            containerName,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		// The image's entrypoint is a script that writes a default config into /ircd and ignores
		// arguments; the binary is started directly on the mounted config.
		Command: []string{ergoBinary, "run", "--conf", configPath},
		Ports:   ports,
		Env:     env(n),
		VolumeMounts: []corev1.VolumeMount{
			{Name: configVolume, MountPath: configDir, ReadOnly: true},
			{Name: dataVolume, MountPath: dataDir},
			{Name: tmpVolume, MountPath: "/tmp"},
		},
		SecurityContext: ircnet.ContainerSecurityContext(),
		Resources:       ircnet.Resources(n.Spec.Resources),
	}
	if port, ok := probePort(n); ok {
		c.StartupProbe, c.ReadinessProbe, c.LivenessProbe = probes(port)
	}
	return c
}

// env hands ergo the oper's bcrypt hash straight from the user's Secret. ergo reads ERGO__ variables
// only with allow-environment-overrides, which BuildConfig sets together with the "admin" oper whose
// password this fills in.
func env(n *ircv1.ErgoNetwork) []corev1.EnvVar {
	creds := n.Spec.OperCredentials
	if creds == nil {
		return nil
	}
	key := creds.Key
	if key == "" {
		key = ircv1.DefaultOperSecretKey
	}
	return []corev1.EnvVar{{
		Name: OperPasswordEnv,
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: creds.SecretName},
			Key:                  key,
		}},
	}}
}

// probePort is the container port the probes connect to (see ircnet.ProbePort).
func probePort(n *ircv1.ErgoNetwork) (string, bool) { return ircnet.ProbePort(ServicePorts(n)) }

// probes are plain TCP connects (ircnet.Probes). Each connect comes from the node's address, which
// BuildConfig exempts from ergo's per-IP limits, so probes neither get refused nor eat into what real
// clients on that address may open.
func probes(port string) (startup, readiness, liveness *corev1.Probe) { return ircnet.Probes(port) }

// volumes are the config and the certificate in one projected volume at /etc/ergo (ircnet.ConfigVolume:
// /etc/ergo/ircd.yaml and /etc/ergo/tls/tls.{crt,key}), the datastore's claim, and /tmp: ergo writes
// nothing outside /ircd that we know of, /tmp is there so a library that does meets a small, bounded
// scratch space.
func volumes(n *ircv1.ErgoNetwork) []corev1.Volume {
	tlsSecret := ""
	if n.Spec.TLS != nil {
		tlsSecret = TLSSecretName(n)
	}
	return []corev1.Volume{
		ircnet.ConfigVolume(configVolume, ConfigMapName(n), ConfigKey, tlsSecret),
		{Name: dataVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PVCName(n)},
		}},
		ircnet.TmpVolume(tmpVolume),
	}
}

// digestKey is the pod template annotation the config digest goes under.
func (o Options) digestKey() string {
	if o.LegacyDigestKey {
		return LegacyConfigDigestAnnotation
	}
	return ConfigDigestAnnotation
}
