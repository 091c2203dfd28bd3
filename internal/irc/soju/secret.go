package soju

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// DatabaseSecret is the Secret {name}-db with the role's login, in the keys of internal/postgres (host,
// port, user, password, database, sslmode, and all of it as a postgresql:// url). soju's pod reads the
// password from it as PGPASSWORD; the rest is there for people and tools that need the database.
func DatabaseSecret(b *ircv1.SojuBouncer, login postgres.Settings) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ChildMeta(b).Object(DatabaseSecretName(b)),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			postgres.KeyHost:     []byte(login.Host),
			postgres.KeyPort:     []byte(strconv.Itoa(login.Port)),
			postgres.KeyUser:     []byte(login.User),
			postgres.KeyPassword: []byte(login.Password),
			postgres.KeyDatabase: []byte(login.Database),
			postgres.KeySSLMode:  []byte(login.SSLMode),
			postgres.KeyURL:      []byte(login.URL()),
		},
	}
}
