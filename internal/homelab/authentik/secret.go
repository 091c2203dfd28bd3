package authentik

import (
	"encoding/base64"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

// randomBytes is how many random bytes each generated value holds.
var randomBytes = map[string]int{SecretKeyKey: 48, BootstrapPasswordKey: 24, BootstrapTokenKey: 32}

// Generate makes the values the generated Secret lacks, reading randomness from rand (crypto/rand.Reader
// in the operator): every key of SecretKeys that have holds is kept as it is, so a Secret once made never
// changes. It returns the missing values only.
func Generate(have map[string][]byte, rand io.Reader) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, k := range SecretKeys {
		if len(have[k]) > 0 {
			continue
		}
		b := make([]byte, randomBytes[k])
		if _, err := io.ReadFull(rand, b); err != nil {
			return nil, fmt.Errorf("generate %s: %w", k, err)
		}
		out[k] = []byte(base64.RawURLEncoding.EncodeToString(b))
	}
	return out, nil
}

// Secret is the generated Secret holding data (from Generate). The operator creates it once and then
// only adds keys it lacks; it never rewrites a value.
func Secret(a *homelabv1.AuthentikServer, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(a, SecretName(a)),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}
