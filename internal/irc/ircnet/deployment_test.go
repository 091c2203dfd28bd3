package ircnet

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestDeployment(t *testing.T) {
	m := Meta{
		Namespace: "ns",
		Labels:    map[string]string{"app": "x", "instance": "n", "version": "1"},
		Selector:  map[string]string{"app": "x", "instance": "n"},
		Owner:     metav1.OwnerReference{Kind: "ErgoNetwork", Name: "n"},
	}
	spec := PodSpec(true, 1000, []corev1.Container{{Name: "server"}}, []corev1.Volume{{Name: "config"}})
	d := m.Deployment("n-server", map[string]string{"digest": "abc"}, spec)

	if d.Kind != "Deployment" || d.APIVersion != "apps/v1" || d.Name != "n-server" || d.Namespace != "ns" ||
		len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Name != "n" {
		t.Errorf("identity %+v %+v", d.TypeMeta, d.ObjectMeta)
	}
	// One process at a time: a single replica, and the old pod gone before the new one starts.
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %v, strategy %q; want 1, Recreate", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	// The selector is the labels that never change; the pods carry every label, so the selector finds them.
	if !reflect.DeepEqual(d.Spec.Selector.MatchLabels, m.Selector) || !reflect.DeepEqual(d.Spec.Template.Labels, m.Labels) {
		t.Errorf("selector %v, pod labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	if d.Spec.Template.Annotations["digest"] != "abc" || !reflect.DeepEqual(d.Spec.Template.Spec, spec) {
		t.Errorf("pod template %+v", d.Spec.Template)
	}
}

func TestPodSpec(t *testing.T) {
	for _, openShift := range []bool{false, true} {
		s := PodSpec(openShift, 1000, []corev1.Container{{Name: "server"}}, []corev1.Volume{{Name: "config"}})
		if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken ||
			s.EnableServiceLinks == nil || *s.EnableServiceLinks {
			t.Errorf("openShift %v: token %v, service links %v; want neither", openShift, s.AutomountServiceAccountToken, s.EnableServiceLinks)
		}
		if s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 30 {
			t.Errorf("openShift %v: grace period %v, want 30", openShift, s.TerminationGracePeriodSeconds)
		}
		if !reflect.DeepEqual(s.SecurityContext, PodSecurityContext(openShift, 1000)) {
			t.Errorf("openShift %v: security context %+v", openShift, s.SecurityContext)
		}
		if len(s.Containers) != 1 || s.Containers[0].Name != "server" || len(s.Volumes) != 1 || s.Volumes[0].Name != "config" {
			t.Errorf("openShift %v: containers %v, volumes %v", openShift, s.Containers, s.Volumes)
		}
	}
}

func TestContainerPorts(t *testing.T) {
	tests := []struct {
		name  string
		ports []ircv1.ListenerStatus
		want  []corev1.ContainerPort
	}{
		{name: "none", ports: nil, want: nil},
		{name: "plain and tls", ports: []ircv1.ListenerStatus{{Name: "irc-6667", Port: 6667}, {Name: "ircs-6697", Port: 6697, TLS: true}},
			want: []corev1.ContainerPort{{Name: "irc-6667", ContainerPort: 6667, Protocol: corev1.ProtocolTCP}, {Name: "ircs-6697", ContainerPort: 6697, Protocol: corev1.ProtocolTCP}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ContainerPorts(tt.ports); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ContainerPorts = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigMap(t *testing.T) {
	m := Meta{Namespace: "ns", Labels: map[string]string{"app": "x"}, Owner: metav1.OwnerReference{Kind: "SojuBouncer", Name: "b"}}
	c := m.ConfigMap("b-config", "config", []byte("listen irc://\n"))
	if c.Kind != "ConfigMap" || c.APIVersion != "v1" || c.Name != "b-config" || c.Namespace != "ns" ||
		!reflect.DeepEqual(c.Labels, m.Labels) || len(c.OwnerReferences) != 1 {
		t.Errorf("identity %+v %+v", c.TypeMeta, c.ObjectMeta)
	}
	if !reflect.DeepEqual(c.Data, map[string]string{"config": "listen irc://\n"}) || c.BinaryData != nil {
		t.Errorf("data %v, binary %v; want the config under its key alone", c.Data, c.BinaryData)
	}
}
