package postgres

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

// AppName is the app.kubernetes.io/name of the Secrets made here.
const AppName = "postgres"

// AnnotationRotation is the annotation on a generated Secret that holds the value of the PostgresDatabase's rotate-password
// annotation that its password answers. A different value on the PostgresDatabase asks for a new password.
const AnnotationRotation = "homelab.mortenolsen.pro/password-rotation"

// Secret is the Secret <name>-postgres holding the credentials of db, a PostgresDatabase of kind dbKind:
// the server's host, port and sslmode from server, the role, its password and the database, and all of
// it as a postgresql:// url. rotation is the db's rotate-password annotation that password answers (""
// when none). db is any object and its kind a parameter, so that this package, which SojuBouncer's
// closure shares, imports no API group (test/layout).
func Secret(db metav1.Object, dbKind schema.GroupVersionKind, server Settings, role, password, rotation string) *corev1.Secret {
	login := server.As(role, password, role)
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      SecretName(db.GetName()),
			Namespace: db.GetNamespace(),
			Labels:    labels.Labels(AppName, db.GetName()),
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(db, dbKind),
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			KeyHost:     []byte(login.Host),
			KeyPort:     []byte(strconv.Itoa(login.Port)),
			KeyUser:     []byte(login.User),
			KeyPassword: []byte(login.Password),
			KeyDatabase: []byte(login.Database),
			KeySSLMode:  []byte(login.SSLMode),
			KeyURL:      []byte(login.URL()),
		},
	}
	if rotation != "" {
		s.Annotations = map[string]string{AnnotationRotation: rotation}
	}
	return s
}

// KeptPassword is the password of live, the database's Secret as it is, when it should be kept: live
// exists, holds a password, and no new rotation is asked for (rotation, the rotate-password annotation's
// value, is empty or the one live answers already). ok is false when a new password is due.
func KeptPassword(live *corev1.Secret, rotation string) (password string, ok bool) {
	if live == nil || len(live.Data[KeyPassword]) == 0 || (rotation != "" && live.Annotations[AnnotationRotation] != rotation) {
		return "", false
	}
	return string(live.Data[KeyPassword]), true
}
