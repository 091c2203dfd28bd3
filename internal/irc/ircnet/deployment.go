package ircnet

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// Deployment runs one IRC server process named name: a single replica replaced with Recreate, since two
// processes of one server must never run at once (ergo's datastore, soju's upstream connections), its
// pods labelled and selected as m says. podAnnotations go on the pod template (the digest that rolls the
// pod when the server's config changes).
func (m Meta) Deployment(name string, podAnnotations map[string]string, spec corev1.PodSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: m.Object(name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: m.Selector},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: m.Labels, Annotations: podAnnotations},
				Spec:       spec,
			},
		},
	}
}

// PodSpec is an IRC server's pod: containers (the server first) and volumes, under the restricted
// security context (PodSecurityContext of uid). Neither server talks to the API server, so no token is
// mounted, and Service env vars would only be noise in an environment ergo reads overrides from. Both
// shut down on SIGTERM at once: the default grace period is plenty and bounds how long a Recreate
// rollout keeps the server down.
func PodSpec(openShift bool, uid int64, containers []corev1.Container, volumes []corev1.Volume) corev1.PodSpec {
	return corev1.PodSpec{
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		SecurityContext:               PodSecurityContext(openShift, uid),
		Containers:                    containers,
		Volumes:                       volumes,
	}
}

// ContainerPorts are the server container's ports, one per listener port.
func ContainerPorts(ports []ircv1.ListenerStatus) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range ports {
		out = append(out, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: corev1.ProtocolTCP})
	}
	return out
}
