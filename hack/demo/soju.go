package main

import (
	"context"
	"fmt"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/jackc/pgx/v5"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
)

// The SojuBouncer scenario: the sample bouncer, its admin connection Secret and its admin user's password
// Secret are applied; the demo starts a real PostgreSQL server on 127.0.0.1 (the machine's, as the tests
// do) and points the admin connection Secret at it; kube-controller-manager, kube-scheduler and kwok run
// the Deployment's pod; the demo plays cert-manager for the Certificate.
func init() {
	register(Scenario{
		Name:  "soju",
		Title: "SojuBouncer, an IRC bouncer on a PostgreSQL database of its own (irc.josie.cloud/v1alpha1)",
		// The admin connection Secret (extras/soju-db-admin.yaml's format) is the demo's own, written
		// before the bouncer is applied and pointing at the demo's server (sojuBefore).
		Samples: []string{"extras/soju-admin-user.yaml", "irc_v1alpha1_sojubouncer.yaml"},
		Before:  sojuBefore,
		Follow:  ircv1.GroupVersion.WithKind("SojuBouncer"),
		Steps:   sojuSteps,
		Show:    sojuShow,
		Kubectl: func(obj client.Object) []string {
			return []string{
				"get sojubouncers,deployments,pods,services,configmaps,secrets,certificates,routes -o wide",
				"describe sojubouncer " + obj.GetName(),
			}
		},
	})
}

// sojuServer is the scenario's PostgreSQL server, once a Play step started it.
var sojuServer demoPostgres

// sojuChildKinds are the kinds of what the operator makes for a bouncer.
var sojuChildKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	cmv1.SchemeGroupVersion.WithKind("Certificate"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	routev1.GroupVersion.WithKind("Route"),
}

// sojuBefore starts the server and writes the admin connection Secret the sample bouncer names, before
// the bouncer is applied: the operator's first reconcile finds a server that answers, not a login failure
// on the sample's placeholder host (a Warning event a newcomer would read as the demo failing).
func sojuBefore(client.Object) []Step { return []Step{Play(playSojuPostgres)} }

// sojuSteps follow the bouncer: its database is made, its Deployment becomes Available, and the demo
// plays cert-manager.
func sojuSteps(obj client.Object) []Step {
	b := obj.(*ircv1.SojuBouncer)
	steps := []Step{
		WaitFor(fmt.Sprintf("Waiting for the operator to make the database of SojuBouncer %s/%s", b.Namespace, b.Name),
			ConditionTrue(ircv1.ConditionDatabase)),
		DeploymentAvailable("soju", ircv1.ConditionDeployment),
	}
	if b.Spec.TLS != nil {
		steps = append(steps, Play(playSojuCertManager))
	}
	return steps
}

// playSojuPostgres starts PostgreSQL and writes the admin connection Secret the sample bouncer names
// with a login on it that has CREATEROLE and CREATEDB.
func playSojuPostgres(ctx context.Context, e *Env, obj client.Object) error {
	b := obj.(*ircv1.SojuBouncer)
	name := b.Spec.Database.AdminSecretName
	e.Step("Playing the database admin: starting a PostgreSQL server on 127.0.0.1 and writing Secret %s, the bouncer's admin connection", name)
	return playDatabaseAdmin(ctx, e, &sojuServer, b.Namespace, name, "soju_operator", "demo-soju-operator-password")
}

// playSojuCertManager marks the bouncer's Certificate Ready, as cert-manager does once it has issued it.
func playSojuCertManager(ctx context.Context, e *Env, obj client.Object) error {
	b := obj.(*ircv1.SojuBouncer)
	return playCertificateReady(ctx, e, b.Namespace, soju.CertificateName(b), "")
}

// sojuShow prints the bouncer like kubectl get, its conditions, what it owns, its pod, soju's config, a
// login with its database Secret and its events.
func sojuShow(ctx context.Context, e *Env, obj client.Object) {
	b := obj.(*ircv1.SojuBouncer)
	e.Step("SojuBouncers (like kubectl get sojubouncers -n %s)", b.Namespace)
	ready := readyStatus(b.Status.Conditions)
	e.Table([]string{"NAME", "HOSTNAME", "READY", "AGE"}, [][]string{{b.Name, b.Spec.Hostname, ready, Age(b.CreationTimestamp.Time)}})
	e.Table([]string{"DATABASE", "SECRET", "SERVICE HOST"}, [][]string{{b.Status.DatabaseName, b.Status.DatabaseSecretName, b.Status.ServiceHost}})
	e.Conditions("SojuBouncer", b, b.Status.Conditions)
	e.Children(ctx, e.Client, b, sojuChildKinds)
	e.Pods(ctx, e.Client, b, map[string]string{"app.kubernetes.io/instance": b.Name, "app.kubernetes.io/name": soju.AppName})

	e.Step("soju's config in ConfigMap %s (no password: soju reads PGPASSWORD from Secret %s)", soju.ConfigMapName(b), soju.DatabaseSecretName(b))
	var cm corev1.ConfigMap
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: soju.ConfigMapName(b)}, &cm); err != nil {
		e.Printf("(not there: %v)", err)
	} else {
		e.Text(cm.Data[soju.ConfigKey])
	}
	sojuLogin(ctx, e, b)
	e.Events(ctx, e.Client, "SojuBouncer", b)
}

// sojuLogin logs in with the bouncer's database Secret, as soju does, and shows it owns its database.
func sojuLogin(ctx context.Context, e *Env, b *ircv1.SojuBouncer) {
	if b.Status.DatabaseSecretName == "" {
		return
	}
	e.Step("Logging in with Secret %s (its url key), as soju does", b.Status.DatabaseSecretName)
	secret := &corev1.Secret{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Status.DatabaseSecretName}, secret); err != nil {
		e.Printf("(cannot read it: %v)", err)
		return
	}
	conn, err := pgx.Connect(ctx, string(secret.Data["url"]))
	if err != nil {
		e.Printf("login failed: %v", err)
		return
	}
	defer func() { _ = conn.Close(ctx) }()
	var user, database, owner string
	if err := conn.QueryRow(ctx, "SELECT current_user, current_database(), pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()").
		Scan(&user, &database, &owner); err != nil {
		e.Printf("query failed: %v", err)
		return
	}
	e.Table([]string{"CURRENT_USER", "CURRENT_DATABASE()", "DATABASE OWNER"}, [][]string{{user, database, owner}})
	sojuServer.showPasswordNotLogged(e, secret.Data["password"])
}
