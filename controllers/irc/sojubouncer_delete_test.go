package irc

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

func TestDecideDelete(t *testing.T) {
	tests := []struct {
		name        string
		policy      ircv1.ReclaimPolicy
		annotations map[string]string
		want        deleteDecision
		wantType    string
		wantReason  string
	}{
		{name: "Delete", policy: ircv1.ReclaimDelete, want: dropDatabase},
		{name: "defaulted", want: dropDatabase},
		{name: "Retain", policy: ircv1.ReclaimRetain, want: releaseNow, wantType: corev1.EventTypeNormal, wantReason: ircv1.ReasonDatabaseRetained},
		{name: "released", policy: ircv1.ReclaimDelete, annotations: map[string]string{ircv1.AnnotationReleaseDatabase: "true"},
			want: releaseNow, wantType: corev1.EventTypeWarning, wantReason: ircv1.ReasonCleanupAbandoned},
		{name: "release annotation not true", annotations: map[string]string{ircv1.AnnotationReleaseDatabase: "yes"}, want: dropDatabase},
	}
	for _, tt := range tests {
		b := &ircv1.SojuBouncer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", Annotations: tt.annotations},
			Spec: ircv1.SojuBouncerSpec{Database: ircv1.SojuDatabaseSpec{ReclaimPolicy: tt.policy}}}
		got, eventType, reason, _ := decideDelete(b)
		if got != tt.want || eventType != tt.wantType || reason != tt.wantReason {
			t.Errorf("%s: decideDelete = %v, %q, %q; want %v, %q, %q", tt.name, got, eventType, reason, tt.want, tt.wantType, tt.wantReason)
		}
	}
}

func TestSojuCleanupRetry(t *testing.T) {
	for deleting, want := range map[time.Duration]time.Duration{
		0: DatabaseRetry, 9 * time.Minute: DatabaseRetry, 10 * time.Minute: 5 * time.Minute, 48 * time.Hour: 5 * time.Minute,
	} {
		if got := newSojuProvisioner(0).CleanupRetry(deleting); got != want {
			t.Errorf("cleanupRetry(%s) = %s, want %s", deleting, got, want)
		}
	}
}

func TestNextCleanup(t *testing.T) {
	tests := []struct {
		deleting, timeout, wantRetry time.Duration
		wantGiveUp                   bool
	}{
		{deleting: 0, timeout: DefaultCleanupTimeout, wantRetry: DatabaseRetry},
		{deleting: 20 * time.Minute, timeout: DefaultCleanupTimeout, wantRetry: 5 * time.Minute},
		{deleting: 28 * time.Minute, timeout: DefaultCleanupTimeout, wantRetry: 2 * time.Minute},
		{deleting: DefaultCleanupTimeout, timeout: DefaultCleanupTimeout, wantGiveUp: true},
		{deleting: 48 * time.Hour, timeout: DefaultCleanupTimeout, wantGiveUp: true},
		{deleting: 10 * time.Second, timeout: 15 * time.Second, wantRetry: 5 * time.Second},
	}
	for _, tt := range tests {
		retry, giveUp := newSojuProvisioner(tt.timeout).NextCleanup(tt.deleting)
		if retry != tt.wantRetry || giveUp != tt.wantGiveUp {
			t.Errorf("nextCleanup(%s, %s) = %s, %v; want %s, %v", tt.deleting, tt.timeout, retry, giveUp, tt.wantRetry, tt.wantGiveUp)
		}
	}
}

func TestSojuConnectFailure(t *testing.T) {
	tests := []struct {
		err        error
		wantReason string
		wantRetry  time.Duration
	}{
		{&pgconn.PgError{Code: "28P01"}, ircv1.ReasonAuthenticationFailed, reconcile.RefusedRetry},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, ircv1.ReasonUnreachable, DatabaseRetry},
		{context.DeadlineExceeded, ircv1.ReasonUnreachable, DatabaseRetry},
		{&pgconn.PgError{Code: "3D000"}, ircv1.ReasonSQLFailed, reconcile.RefusedRetry},
	}
	for _, tt := range tests {
		if reason, retry := newSojuProvisioner(0).LoginFailure(tt.err); reason != tt.wantReason || retry != tt.wantRetry {
			t.Errorf("connectFailure(%v) = %s, %s; want %s, %s", tt.err, reason, retry, tt.wantReason, tt.wantRetry)
		}
	}
}

func TestParseAdminSecret(t *testing.T) {
	for ref, want := range map[string]string{"": "/", "ops/pg-admin": "ops/pg-admin", "pg-admin": "error", "ops/": "error", "a/b/c": "error"} {
		got, err := ParseAdminSecret(ref)
		if want == "error" {
			if err == nil {
				t.Errorf("ParseAdminSecret(%q) = %s, want an error", ref, got)
			}
			continue
		}
		if err != nil || got.String() != want {
			t.Errorf("ParseAdminSecret(%q) = %s, %v; want %s", ref, got, err, want)
		}
	}
}
