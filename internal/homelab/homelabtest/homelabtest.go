// Package homelabtest holds the homelab fixtures the specs of controllers/homelab build their objects
// from: the smallest valid Domain, AuthentikServer, PostgresConnection, PostgresDatabase and
// RedisConnection, which a spec then edits for what it tests. It imports no other package of this module
// but the API types, so another test layer (e2e, the demo, the bench) can use it too.
package homelabtest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

// Issuer is the cert-manager issuer the fixtures' Domains name.
const Issuer = "letsencrypt"

// Domain is a Domain ns/name serving hostname, its certificate signed by Issuer.
func Domain(ns, name, hostname string) *homelabv1.Domain {
	return &homelabv1.Domain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: homelabv1.DomainSpec{Hostname: hostname, Issuer: Issuer}}
}

// AuthentikServer is an AuthentikServer ns/name on the Domain "home", the PostgresDatabase "sso-db" and
// the RedisConnection "cache" of its namespace.
func AuthentikServer(ns, name string) *homelabv1.AuthentikServer {
	return &homelabv1.AuthentikServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: homelabv1.AuthentikServerSpec{Domain: "home", Database: "sso-db", Redis: "cache"}}
}

// PostgresConnection is a PostgresConnection ns/name whose admin credentials are in the Secret secret.
func PostgresConnection(ns, name, secret string) *homelabv1.PostgresConnection {
	return &homelabv1.PostgresConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: homelabv1.PostgresConnectionSpec{Secret: secret}}
}

// PostgresDatabase is a PostgresDatabase ns/name on connection (a "name" or "namespace/name" reference).
func PostgresDatabase(ns, name, connection string) *homelabv1.PostgresDatabase {
	return &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: homelabv1.PostgresDatabaseSpec{Connection: connection}}
}

// RedisConnection is a RedisConnection ns/name whose address and password are in the Secret secret.
func RedisConnection(ns, name, secret string) *homelabv1.RedisConnection {
	return &homelabv1.RedisConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: homelabv1.RedisConnectionSpec{Secret: secret}}
}
