package ergo

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// ConfigMap holds the rendered ircd.yaml under ConfigKey. It never holds secrets: the oper password
// hash reaches ergo through OperPasswordEnv.
func ConfigMap(n *ircv1.ErgoNetwork, rendered []byte) *corev1.ConfigMap {
	return childMeta(n).ConfigMap(ConfigMapName(n), ConfigKey, rendered)
}

// ConfigSource identifies the config c as rendered ircd.yaml would carry it: a digest of its JSON form
// (the first step of RenderConfig), which costs a small part of rendering. Equal sources render to the
// same ircd.yaml, so a ConfigMap annotated with the source of the current config (WithConfigSource) holds
// it without rendering it again.
func ConfigSource(c *Config) (string, error) {
	j, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("ergo config source: %w", err)
	}
	sum := sha256.Sum256(j)
	return hex.EncodeToString(sum[:16]), nil
}

// WithConfigSource annotates cm, holding rendered, with the source it was rendered from and the config
// digest's state after it (ConfigDigestPrefix): what a reconciler needs of the config, after a restart,
// to know the ConfigMap current and to compute the pod's config digest, without rendering it.
func WithConfigSource(cm *corev1.ConfigMap, source string, rendered []byte) *corev1.ConfigMap {
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[ConfigSourceAnnotation] = source
	cm.Annotations[ConfigStateAnnotation] = base64.StdEncoding.EncodeToString(ConfigDigestPrefix(rendered))
	return cm
}

// SourcedConfigMap is the ConfigMap the operator applies for n: rendered, the rendering of c, annotated
// with c's source (WithConfigSource).
func SourcedConfigMap(n *ircv1.ErgoNetwork, c *Config, rendered []byte) (*corev1.ConfigMap, error) {
	source, err := ConfigSource(c)
	if err != nil {
		return nil, err
	}
	return WithConfigSource(ConfigMap(n, rendered), source, rendered), nil
}

// ConfigStateOf is the config digest state a ConfigMap's annotations carry (WithConfigSource), or nil.
func ConfigStateOf(annotations map[string]string) []byte {
	state, err := base64.StdEncoding.DecodeString(annotations[ConfigStateAnnotation])
	if err != nil || len(state) == 0 {
		return nil
	}
	return state
}
