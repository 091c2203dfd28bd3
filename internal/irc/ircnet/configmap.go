package ircnet

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigMap holds a server's rendered config under key, and nothing secret: passwords reach the server
// through its environment.
func (m Meta) ConfigMap(name, key string, rendered []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: m.Object(name),
		Data:       map[string]string{key: string(rendered)},
	}
}
