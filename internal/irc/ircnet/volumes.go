package ircnet

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// ConfigVolume is the volume named name that puts the server's config (key configKey of ConfigMap
// configMap) and, when tlsSecret is not empty, its certificate into one projected volume: <key> and
// tls/tls.{crt,key}. Two volumes, one mounted inside the other, would need kubelet to create the tls mount
// point inside a read-only ConfigMap volume; one projected volume needs no nesting, and updates both
// atomically.
func ConfigVolume(name, configMap, configKey, tlsSecret string) corev1.Volume {
	sources := []corev1.VolumeProjection{{
		ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
			Items:                []corev1.KeyToPath{{Key: configKey, Path: configKey}},
		},
	}}
	if tlsSecret != "" {
		sources = append(sources, corev1.VolumeProjection{
			Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: tlsSecret},
				Items: []corev1.KeyToPath{
					{Key: corev1.TLSCertKey, Path: "tls/" + corev1.TLSCertKey},
					{Key: corev1.TLSPrivateKeyKey, Path: "tls/" + corev1.TLSPrivateKeyKey},
				},
			},
		})
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

// TmpVolume is a small, bounded scratch space at /tmp for a library that writes temporary files, instead
// of the read-only root filesystem.
func TmpVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		SizeLimit: ptr.To(resource.MustParse("16Mi")),
	}}}
}
