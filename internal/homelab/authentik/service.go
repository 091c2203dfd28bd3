package authentik

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

// Service puts the server's HTTP port behind ServicePort inside the cluster.
func Service(a *homelabv1.AuthentikServer) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(a, ServiceName(a)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: SelectorLabels(a, ComponentServer),
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: ServicePort,
				TargetPort: intstr.FromString("http")}},
		},
	}
}

// ServiceHost is the Service's in-cluster DNS name.
func ServiceHost(a *homelabv1.AuthentikServer) string {
	return ServiceName(a) + "." + a.Namespace + ".svc.cluster.local"
}
