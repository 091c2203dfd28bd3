package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

// The PostgresDatabase scenario: the sample PostgresConnection and PostgresDatabase are applied; the demo
// starts a real PostgreSQL server on 127.0.0.1 (the machine's, as the tests do) and writes the
// connection's Secret for it, playing the admin who runs the server; the operator makes the role, the
// database and the database's Secret, and the demo logs in with that Secret. The server stops when the
// demo does.
func init() {
	register(Scenario{
		Name:    "postgres",
		Title:   "PostgresDatabase, a database and its role made on demand (homelab.mortenolsen.pro/v1)",
		Samples: []string{"homelab_v1_postgresconnection.yaml", "homelab_v1_postgresdatabase.yaml"},
		Follow:  homelabv1.GroupVersion.WithKind("PostgresDatabase"),
		Steps:   postgresSteps,
		Show:    postgresShow,
		Kubectl: func(obj client.Object) []string {
			return []string{
				"get postgresconnections,postgresdatabases,secrets",
				"describe postgresdatabase " + obj.GetName(),
			}
		},
	})
}

// postgresServer is the demo's PostgreSQL server, once a Play step started it.
var postgresServer demoPostgres

// postgresSteps start the server and write the connection's Secret, then follow the connection and the
// database to Ready.
func postgresSteps(obj client.Object) []Step {
	db := obj.(*homelabv1.PostgresDatabase)
	return []Step{
		Play(playPostgresServer),
		WaitFor(fmt.Sprintf("Waiting for the operator to log in through PostgresConnection %s", db.Spec.Connection),
			ConditionTrue(homelabv1.ConditionConnection)),
		WaitFor("Waiting for the role and the database on the server", ConditionTrue(homelabv1.ConditionDatabase)),
		WaitFor("Waiting for the Secret with the role's credentials", ConditionTrue(homelabv1.ConditionCredentials)),
	}
}

// playPostgresServer starts PostgreSQL and writes the Secret the sample PostgresConnection names, with a
// login that has CREATEROLE and CREATEDB and is no superuser, as an admin would hand the operator.
func playPostgresServer(ctx context.Context, e *Env, obj client.Object) error {
	db := obj.(*homelabv1.PostgresDatabase)
	conn := &homelabv1.PostgresConnection{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.Spec.Connection}, conn); err != nil {
		return fmt.Errorf("read PostgresConnection %s: %w", db.Spec.Connection, err)
	}
	e.Step("Playing the database admin: starting a PostgreSQL server on 127.0.0.1 and writing Secret %s for PostgresConnection %s",
		conn.Spec.Secret, conn.Name)
	return playDatabaseAdmin(ctx, e, &postgresServer, conn.Namespace, conn.Spec.Secret, "platform_operator", "demo-operator-password")
}

// postgresChildKinds are the kinds of what the operator makes in the namespace for a database.
var postgresChildKinds = []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Secret")}

// postgresShow prints the connection and the database like kubectl get, their conditions, the Secret,
// a login with the Secret's url, and the events.
func postgresShow(ctx context.Context, e *Env, obj client.Object) {
	db := obj.(*homelabv1.PostgresDatabase)
	conn := &homelabv1.PostgresConnection{}
	connErr := e.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.Spec.Connection}, conn)
	if connErr == nil {
		e.Step("PostgresConnections (like kubectl get postgresconnections -n %s)", conn.Namespace)
		e.Table([]string{"NAME", "SECRET", "VERSION", "READY", "AGE"}, [][]string{{
			conn.Name, conn.Spec.Secret, conn.Status.ServerVersion, readyStatus(conn.Status.Conditions), Age(conn.CreationTimestamp.Time),
		}})
		e.Conditions("PostgresConnection", conn, conn.Status.Conditions)
	}
	e.Step("PostgresDatabases (like kubectl get postgresdatabases -n %s)", db.Namespace)
	e.Table([]string{"NAME", "CONNECTION", "DATABASE", "SECRET", "READY", "AGE"}, [][]string{{
		db.Name, db.Spec.Connection, db.Status.DatabaseName, db.Status.SecretName, readyStatus(db.Status.Conditions), Age(db.CreationTimestamp.Time),
	}})
	e.Conditions("PostgresDatabase", db, db.Status.Conditions)
	e.Children(ctx, e.Client, db, postgresChildKinds)
	postgresLogin(ctx, e, db)
	e.Events(ctx, e.Client, "PostgresDatabase", db)
}

// postgresLogin connects with the database's Secret, as an application would, and shows who it is.
func postgresLogin(ctx context.Context, e *Env, db *homelabv1.PostgresDatabase) {
	if db.Status.SecretName == "" {
		return
	}
	e.Step("Logging in with Secret %s (its url key), as an application would", db.Status.SecretName)
	secret := &corev1.Secret{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.Status.SecretName}, secret); err != nil {
		e.Printf("(cannot read it: %v)", err)
		return
	}
	e.Printf("keys: host=%s port=%s user=%s database=%s password=(%d characters) url=postgresql://%s:***@%s:%s/%s",
		secret.Data["host"], secret.Data["port"], secret.Data["user"], secret.Data["database"], len(secret.Data["password"]),
		secret.Data["user"], secret.Data["host"], secret.Data["port"], secret.Data["database"])
	conn, err := pgx.Connect(ctx, string(secret.Data["url"]))
	if err != nil {
		e.Printf("login failed: %v", err)
		return
	}
	defer func() { _ = conn.Close(ctx) }()
	var user, database string
	if err := conn.QueryRow(ctx, "SELECT current_user, current_database()").Scan(&user, &database); err != nil {
		e.Printf("query failed: %v", err)
		return
	}
	e.Table([]string{"CURRENT_USER", "CURRENT_DATABASE()"}, [][]string{{user, database}})
	postgresServer.showPasswordNotLogged(e, secret.Data["password"])
}
