package soju

import (
	corev1 "k8s.io/api/core/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// ConfigMap holds the rendered config under ConfigKey. It never holds a password: the database's
// reaches soju through PGPASSWORD, the admin user's through the init container's environment.
func ConfigMap(b *ircv1.SojuBouncer, rendered []byte) *corev1.ConfigMap {
	return ChildMeta(b).ConfigMap(ConfigMapName(b), ConfigKey, rendered)
}
