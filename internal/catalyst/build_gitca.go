package catalyst

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

// GitCAConfigMapName names the ConfigMap, in a Project's namespace, that carries the operator's Git CA
// bundle (--catalyst-git-ca-file) to the build Jobs.
const GitCAConfigMapName = "catalyst-git-ca"

// GitCAKey is the ConfigMap's key holding the PEM bundle.
const GitCAKey = "ca.crt"

// GitCAConfigMap is the ConfigMap GitCAConfigMapName in namespace ns holding pem, or nil when there is no
// bundle. Every Project of the namespace shares it: it carries no owner reference, and its content is
// the operator's, not a Project's.
func GitCAConfigMap(ns string, pem []byte) *corev1.ConfigMap {
	if len(pem) == 0 {
		return nil
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: GitCAConfigMapName, Namespace: ns,
			Labels: labels.Labels(BuildApp, GitCAConfigMapName)},
		Data: map[string]string{GitCAKey: string(pem)},
	}
}
