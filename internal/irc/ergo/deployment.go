package ergo

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

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

// ContainerName is the name of the container that runs ergo in the Deployment's pod.
const ContainerName = "ergo"

const (
	ergoBinary = "/ircd-bin/ergo"

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
	// Two ergo processes must never open the same datastore: the old pod is gone before the new one
	// starts (Recreate).
	return childMeta(n).Deployment(DeploymentName(n), map[string]string{opts.digestKey(): configDigest},
		ircnet.PodSpec(opts.OpenShift, ergoUID, []corev1.Container{container(n, image)}, volumes(n)))
}

// RunningImage is the image of d's ergo container (d being a network's Deployment as it is), "" when d is
// nil or has none: with ChooseImage it decides whether an upgrade may roll the pod.
func RunningImage(d *appsv1.Deployment) string {
	if d == nil {
		return ""
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == ContainerName {
			return c.Image
		}
	}
	return ""
}

func container(n *ircv1.ErgoNetwork, image string) corev1.Container {
	c := corev1.Container{
		Name:            ContainerName,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		// The image's entrypoint is a script that writes a default config into /ircd and ignores
		// arguments; the binary is started directly on the mounted config.
		Command: []string{ergoBinary, "run", "--conf", configPath},
		Ports:   ircnet.ContainerPorts(ServicePorts(n)),
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
