package apply

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// answerDeployment is an apply's answer for a Deployment of the size of ergo's: one container with ports,
// probes, mounts and resources, two volumes, its managed fields and status.
func answerDeployment() *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/managed-by": "platform-operator", "app.kubernetes.io/name": "ergo", "app.kubernetes.io/instance": "net-00001"}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6667)}}, PeriodSeconds: 10}
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "net-00001-ergo", UID: "2f1e0c7a-7d3e-4f7b-9a55-0d1c7f0e5b11", ResourceVersion: "123456", Generation: 1,
			Labels: labels, Annotations: map[string]string{DigestAnnotation: "0123456789abcdef"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "irc.josie.cloud/v1alpha1", Kind: "ErgoNetwork", Name: "net-00001",
				UID: "9c0e3d1a-1b2c-4d5e-8f90-a1b2c3d4e5f6", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "platform-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:platform-operator.josie.cloud/applied-digest":{}},` +
					`"f:labels":{"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{}},` +
					`"f:ownerReferences":{"k:{\"uid\":\"9c0e3d1a-1b2c-4d5e-8f90-a1b2c3d4e5f6\"}":{}}},"f:spec":{"f:replicas":{},"f:selector":{},` +
					`"f:strategy":{"f:type":{}},"f:template":{"f:metadata":{"f:annotations":{"f:irc.josie.cloud/config-digest":{}},"f:labels":{}},` +
					`"f:spec":{"f:containers":{"k:{\"name\":\"ergo\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{},"f:readinessProbe":{},` +
					`"f:resources":{},"f:volumeMounts":{}}},"f:volumes":{}}}}}`)}}},
		},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"irc.josie.cloud/config-digest": strings.Repeat("ab", 32)}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ergo", Image: "ghcr.io/ergochat/ergo:v2.14.0",
					Ports:          []corev1.ContainerPort{{Name: "irc", ContainerPort: 6667, Protocol: corev1.ProtocolTCP}, {Name: "ircs", ContainerPort: 6697, Protocol: corev1.ProtocolTCP}},
					ReadinessProbe: probe, LivenessProbe: probe,
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/ircd/config"}, {Name: "data", MountPath: "/ircd/db"}}}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "net-00001-config"}}}},
						{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "net-00001-data"}}}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1},
	}
}

// BenchmarkApplyAnswer compares what reading an apply's answer into the typed child costs: before, the
// answer came as JSON, decoded into a map, then converted into the typed object (setLive); now it is
// decoded straight into the typed object, as protobuf for a built-in kind.
func BenchmarkApplyAnswer(b *testing.B) {
	d := answerDeployment()
	jsonBody, err := runtime.Encode(json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{}), d)
	if err != nil {
		b.Fatal(err)
	}
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	pbBody, err := runtime.Encode(pb, d)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("json-map-convert", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u := &unstructured.Unstructured{}
			if _, _, err := unstructured.UnstructuredJSONScheme.Decode(jsonBody, nil, u); err != nil {
				b.Fatal(err)
			}
			out := &appsv1.Deployment{}
			if err := setLive(out, u.Object); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protobuf-typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := &appsv1.Deployment{}
			if _, _, err := pb.Decode(pbBody, nil, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
