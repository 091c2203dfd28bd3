package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
)

// demoPostgres is a scenario's PostgreSQL server, once its Play step started it (playDatabaseAdmin).
type demoPostgres struct {
	sync.Mutex
	s *postgrestest.Server
}

func (d *demoPostgres) server() *postgrestest.Server {
	d.Lock()
	defer d.Unlock()
	return d.s
}

// playDatabaseAdmin plays the admin who runs the database server: it starts PostgreSQL on 127.0.0.1 into
// d, makes the login the operator is handed (CREATEROLE and CREATEDB, no superuser) and writes it to
// Secret namespace/name in the connection Secret format. The server stops with the operator, which the
// demo stops before the cluster (so the server is gone, and its directory removed, before the demo
// exits), or when the run ends, whichever comes first.
func playDatabaseAdmin(ctx context.Context, e *Env, d *demoPostgres, namespace, name, login, password string) error {
	s, err := postgrestest.Start(ctx)
	if err != nil {
		return fmt.Errorf("start PostgreSQL: %w", err)
	}
	d.Lock()
	d.s = s
	d.Unlock()
	var operatorDone <-chan struct{}
	if e.operator != nil {
		operatorDone = e.operator.Done()
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-operatorDone:
		}
		_ = s.Stop()
	}()
	e.Printf("PostgreSQL listens on %s:%d (data and statement log in a temporary directory, removed on stop)", s.Host, s.Port)
	if err := s.CreateRole(ctx, login, password, "CREATEROLE CREATEDB"); err != nil {
		return fmt.Errorf("create the operator's login: %w", err)
	}
	e.Printf("CREATE ROLE %s LOGIN CREATEROLE CREATEDB (no superuser)", login)
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data:       s.SecretData(login, password),
	}
	if err := e.Client.Patch(ctx, secret, client.Apply, client.FieldOwner(e.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("write Secret %s: %w", name, err)
	}
	e.Printf("Secret %s: host, port, user, password, sslmode=disable", name)
	return nil
}

// showPasswordNotLogged says so when the server's statement log (log_statement=all) does not hold
// password: the operator sent the role's password as a SCRAM verifier.
func (d *demoPostgres) showPasswordNotLogged(e *Env, password []byte) {
	s := d.server()
	if s == nil || len(password) == 0 {
		return
	}
	if log, err := s.ReadLog(); err == nil && !strings.Contains(log, string(password)) {
		e.Printf("the server's statement log (log_statement=all) does not hold the password: the role's password was sent as a SCRAM verifier")
	}
}
