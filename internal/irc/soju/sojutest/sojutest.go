// Package sojutest holds the SojuBouncer fixtures the builders' tests, the envtest suite and the demo
// share: a minimal bouncer, one asking for every child, and the Secrets a user provides (the admin
// connection, the first admin user's password). Stand-ins for the controllers a test cluster does not
// run are ergotest's (MarkDeploymentAvailable, MarkCertificateReady): they work by name on any owner.
package sojutest

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// MinimalBouncer is the smallest bouncer the CRD admits: one plaintext listener, the operator's default
// admin connection, no admin user.
func MinimalBouncer(ns, name string) *ircv1.SojuBouncer {
	return &ircv1.SojuBouncer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ircv1.SojuBouncerSpec{
			Hostname:  name + ".irc.test",
			Listeners: []ircv1.Listener{{Address: ":6667"}},
		},
	}
}

// PlainBouncer has one plaintext listener, the admin connection in Secret adminSecret and a first
// admin user "admin" whose password is in Secret {name}-admin: no certificate, so it becomes Ready as soon
// as its database is made and its Deployment is Available.
func PlainBouncer(ns, name, adminSecret string) *ircv1.SojuBouncer {
	b := MinimalBouncer(ns, name)
	b.Spec.Database.AdminSecretName = adminSecret
	b.Spec.AdminUser = &ircv1.SojuAdminUser{Name: "admin", PasswordSecret: ircv1.SecretKeyRef{Name: name + "-admin"}}
	return b
}

// FullBouncer asks for every child: a TLS and a plaintext listener, a title, a certificate from
// ClusterIssuer "selfsigned", a Route, resources, the admin connection in Secret adminSecret and the
// first admin user "admin" (password in Secret {name}-admin).
func FullBouncer(ns, name, hostname, adminSecret string) *ircv1.SojuBouncer {
	b := PlainBouncer(ns, name, adminSecret)
	b.Spec.Hostname = hostname
	b.Spec.Title = `The "irc.now" bouncer`
	b.Spec.Listeners = []ircv1.Listener{{Address: ":6697", TLS: true}, {Address: ":6667"}}
	b.Spec.TLS = &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "selfsigned", Kind: "ClusterIssuer"}}
	b.Spec.Route = &ircv1.RouteSpec{Host: hostname}
	b.Spec.Resources = &ircv1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi"), corev1.ResourceCPU: resource.MustParse("20m")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	return b
}

// AdminUserSecret is the user's Secret with the first admin user's password under key "password".
func AdminUserSecret(ns, name, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		StringData: map[string]string{"password": password},
	}
}

// ConnectionSecret is an admin connection Secret in the format internal/postgres reads.
func ConnectionSecret(ns, name, host string, port int, user, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		StringData: map[string]string{
			"host": host, "port": strconv.Itoa(port), "user": user, "password": password, "sslmode": "disable",
		},
	}
}
