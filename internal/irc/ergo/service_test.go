package ergo

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestService(t *testing.T) {
	n := referenceNetwork()
	svc := Service(n)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("type = %s, want ClusterIP", svc.Spec.Type)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, SelectorLabels(n)) {
		t.Errorf("selector = %v, want SelectorLabels", svc.Spec.Selector)
	}
	want := []corev1.ServicePort{
		{Name: "ircs-6697", Protocol: corev1.ProtocolTCP, Port: 6697, TargetPort: intstr.FromString("ircs-6697")},
		{Name: "irc-6667", Protocol: corev1.ProtocolTCP, Port: 6667, TargetPort: intstr.FromString("irc-6667")},
	}
	if !reflect.DeepEqual(svc.Spec.Ports, want) {
		t.Errorf("ports = %+v, want %+v", svc.Spec.Ports, want)
	}
	// Every target port must name a port the ergo container declares with the same number.
	container := ergoContainer(t, Deployment(n, Options{}, ""))
	declared := map[string]int32{}
	for _, p := range container.Ports {
		declared[p.Name] = p.ContainerPort
	}
	for _, p := range svc.Spec.Ports {
		if got, ok := declared[p.TargetPort.StrVal]; !ok || got != p.Port {
			t.Errorf("service port %s targets %q, which the container declares as %d (declared: %v)", p.Name, p.TargetPort.String(), got, declared)
		}
	}
}
