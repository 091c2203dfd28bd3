package ergo

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// ConfigMap holds the rendered ircd.yaml under ConfigKey. It never holds secrets: the oper password
// hash reaches ergo through OperPasswordEnv.
func ConfigMap(n *ircv1.ErgoNetwork, rendered []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(n, ConfigMapName(n)),
		Data:       map[string]string{ConfigKey: string(rendered)},
	}
}
