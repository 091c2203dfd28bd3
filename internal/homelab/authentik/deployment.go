package authentik

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

// Inputs are what the Deployments take from the dependencies, once all are Ready.
type Inputs struct {
	// Image is the authentik image; DefaultImage when empty.
	Image string
	// DatabaseSecret is the PostgresDatabase's Secret (status.secretName), in the AuthentikServer's
	// namespace.
	DatabaseSecret string
	// RedisSecret is the RedisConnection's Secret (spec.secret), in the AuthentikServer's namespace.
	RedisSecret string
}

// Components of an AuthentikServer, as ComponentLabel values and the authentik command that runs them.
const (
	ComponentServer = "server"
	ComponentWorker = "worker"
)

// ServerDeployment runs authentik's web server (`server`), serving HTTP on HTTPPort.
func ServerDeployment(a *homelabv1.AuthentikServer, in Inputs) *appsv1.Deployment {
	d := deployment(a, in, ServerName(a), ComponentServer)
	c := &d.Spec.Template.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: HTTPPort, Protocol: corev1.ProtocolTCP}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/-/health/ready/", Port: intstr.FromString("http")}}, PeriodSeconds: 10}
	c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/-/health/live/", Port: intstr.FromString("http")}}, PeriodSeconds: 10, FailureThreshold: 6,
		InitialDelaySeconds: 30}
	return d
}

// WorkerDeployment runs authentik's background worker (`worker`): migrations, outposts, tasks.
func WorkerDeployment(a *homelabv1.AuthentikServer, in Inputs) *appsv1.Deployment {
	d := deployment(a, in, WorkerName(a), ComponentWorker)
	c := &d.Spec.Template.Spec.Containers[0]
	c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"ak", "healthcheck"}}}, PeriodSeconds: 30, FailureThreshold: 3, InitialDelaySeconds: 60}
	return d
}

func deployment(a *homelabv1.AuthentikServer, in Inputs, name, component string) *appsv1.Deployment {
	image := in.Image
	if image == "" {
		image = DefaultImage
	}
	meta := objectMeta(a, name)
	meta.Labels[ComponentLabel] = component
	podLabels := Labels(a)
	podLabels[ComponentLabel] = component
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(a, component)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					EnableServiceLinks: ptr.To(false),
					Containers: []corev1.Container{{
						Name:  component,
						Image: image,
						Args:  []string{component},
						Env:   Env(a, in),
					}},
				},
			},
		},
	}
}

// Env is authentik's configuration: every credential comes from a Secret through secretKeyRef, so no
// value the operator knows is written into the Deployment.
func Env(a *homelabv1.AuthentikServer, in Inputs) []corev1.EnvVar {
	ref := func(name, secret, key string, optional bool) corev1.EnvVar {
		sel := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}
		if optional {
			sel.Optional = ptr.To(true)
		}
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: sel}}
	}
	gen := SecretName(a)
	return []corev1.EnvVar{
		ref("AUTHENTIK_SECRET_KEY", gen, SecretKeyKey, false),
		ref("AUTHENTIK_BOOTSTRAP_PASSWORD", gen, BootstrapPasswordKey, false),
		ref("AUTHENTIK_BOOTSTRAP_TOKEN", gen, BootstrapTokenKey, false),
		ref("AUTHENTIK_POSTGRESQL__HOST", in.DatabaseSecret, DatabaseHostKey, false),
		ref("AUTHENTIK_POSTGRESQL__PORT", in.DatabaseSecret, DatabasePortKey, false),
		ref("AUTHENTIK_POSTGRESQL__USER", in.DatabaseSecret, DatabaseUserKey, false),
		ref("AUTHENTIK_POSTGRESQL__PASSWORD", in.DatabaseSecret, DatabasePasswordKey, false),
		ref("AUTHENTIK_POSTGRESQL__NAME", in.DatabaseSecret, DatabaseNameKey, false),
		ref("AUTHENTIK_REDIS__HOST", in.RedisSecret, RedisHostKey, false),
		ref("AUTHENTIK_REDIS__PORT", in.RedisSecret, RedisPortKey, false),
		ref("AUTHENTIK_REDIS__USERNAME", in.RedisSecret, RedisUserKey, true),
		ref("AUTHENTIK_REDIS__PASSWORD", in.RedisSecret, RedisPasswordKey, true),
	}
}
