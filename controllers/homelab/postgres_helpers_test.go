package homelab

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"k8s.io/apimachinery/pkg/types"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/homelabtest"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

func TestConnectFailure(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantReason string
		wantRetry  time.Duration
	}{
		{"wrong password", &pgconn.PgError{Code: "28P01"}, homelabv1.ReasonAuthenticationFailed, reconcile.RefusedRetry},
		{"no pg_hba entry", &pgconn.PgError{Code: "28000"}, homelabv1.ReasonAuthenticationFailed, reconcile.RefusedRetry},
		{"refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, homelabv1.ReasonUnreachable, PostgresUnreachableRetry},
		{"timeout", context.DeadlineExceeded, homelabv1.ReasonUnreachable, PostgresUnreachableRetry},
		{"no such database", &pgconn.PgError{Code: "3D000"}, homelabv1.ReasonServerError, reconcile.RefusedRetry},
	}
	for _, tt := range tests {
		reason, retry := connectFailure(tt.err)
		if reason != tt.wantReason || retry != tt.wantRetry {
			t.Errorf("%s: connectFailure = %s, %s; want %s, %s", tt.name, reason, retry, tt.wantReason, tt.wantRetry)
		}
		// A connection and its databases name a failed login alike.
		if dbReason, dbRetry := newDatabaseProvisioner(0).LoginFailure(tt.err); dbReason != reason || dbRetry != retry {
			t.Errorf("%s: the PostgresDatabase provisioner maps it to %s, %s; the connection to %s, %s", tt.name, dbReason, dbRetry, reason, retry)
		}
	}
}

func TestCleanupRetry(t *testing.T) {
	for _, tt := range []struct {
		deleting, want time.Duration
	}{
		{0, PostgresUnreachableRetry},
		{9 * time.Minute, PostgresUnreachableRetry},
		{10 * time.Minute, 5 * time.Minute},
		{48 * time.Hour, 5 * time.Minute},
	} {
		if got := newDatabaseProvisioner(0).CleanupRetry(tt.deleting); got != tt.want {
			t.Errorf("cleanupRetry(%s) = %s, want %s", tt.deleting, got, tt.want)
		}
	}
}

func TestConnectionKey(t *testing.T) {
	for ref, want := range map[string]types.NamespacedName{
		"db":         {Namespace: "apps", Name: "db"},
		"homelab/db": {Namespace: "homelab", Name: "db"},
	} {
		db := homelabtest.PostgresDatabase("apps", "app", ref)
		if got := connectionKey(db); got != want {
			t.Errorf("connectionKey(%q) = %s, want %s", ref, got, want)
		}
	}
}
