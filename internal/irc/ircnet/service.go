package ircnet

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// Service exposes every port inside the cluster, one named TCP port each. Target ports refer to the
// container ports by name, so Service and Deployment cannot disagree about numbers.
func Service(m Meta, name string, ports []ircv1.ListenerStatus) *corev1.Service {
	var sp []corev1.ServicePort
	for _, p := range ports {
		sp = append(sp, corev1.ServicePort{
			Name:       p.Name,
			Protocol:   corev1.ProtocolTCP,
			Port:       p.Port,
			TargetPort: intstr.FromString(p.Name),
		})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: m.Object(name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: m.Selector,
			Ports:    sp,
		},
	}
}
