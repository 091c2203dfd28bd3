package postgres

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The API groups' reasons are what users match on; the provisioner returns its own constants, which
// must be the same strings.
func TestProvisionReasonsAreTheAPIs(t *testing.T) {
	for _, tt := range []struct{ ours, irc, homelab string }{
		{ReasonAuthenticationFailed, ircv1.ReasonAuthenticationFailed, homelabv1.ReasonAuthenticationFailed},
		{ReasonUnreachable, ircv1.ReasonUnreachable, homelabv1.ReasonUnreachable},
		{ReasonInsufficientPrivileges, ircv1.ReasonInsufficientPrivileges, homelabv1.ReasonInsufficientPrivileges},
		{ReasonSQLFailed, ircv1.ReasonSQLFailed, homelabv1.ReasonSQLFailed},
		{ReasonDatabaseClaimed, ircv1.ReasonDatabaseClaimed, homelabv1.ReasonDatabaseClaimed},
		{ReasonCleanupBlocked, ircv1.ReasonCleanupBlocked, homelabv1.ReasonCleanupBlocked},
		{ReasonCleanupAbandoned, ircv1.ReasonCleanupAbandoned, homelabv1.ReasonCleanupAbandoned},
	} {
		if tt.ours != tt.irc || tt.ours != tt.homelab {
			t.Errorf("reason %q: irc %q, homelab %q", tt.ours, tt.irc, tt.homelab)
		}
	}
}

func TestProvisionerLoginFailure(t *testing.T) {
	p := &Provisioner{UnreachableRetry: 7 * time.Second, LoginErrorReason: "Other"}
	tests := []struct {
		name       string
		err        error
		wantReason string
		wantRetry  time.Duration
	}{
		{"wrong password", &pgconn.PgError{Code: "28P01"}, ReasonAuthenticationFailed, reconcile.RefusedRetry},
		{"no pg_hba entry", &pgconn.PgError{Code: "28000"}, ReasonAuthenticationFailed, reconcile.RefusedRetry},
		{"refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, ReasonUnreachable, 7 * time.Second},
		{"timeout", context.DeadlineExceeded, ReasonUnreachable, 7 * time.Second},
		{"no such database", &pgconn.PgError{Code: "3D000"}, "Other", reconcile.RefusedRetry},
	}
	for _, tt := range tests {
		if reason, retry := p.LoginFailure(tt.err); reason != tt.wantReason || retry != tt.wantRetry {
			t.Errorf("%s: LoginFailure = %s, %s; want %s, %s", tt.name, reason, retry, tt.wantReason, tt.wantRetry)
		}
	}
}

// A cleanup without a usable admin login is blocked and retried, then given up at the timeout; it
// never counts as dropped.
func TestProvisionerDropBlocked(t *testing.T) {
	p := &Provisioner{Kind: "Thing", ReleaseAnnotation: "example.com/release", UnreachableRetry: 30 * time.Second, CleanupTimeout: time.Hour}
	unusable := errors.New("connection gone")
	got := p.Drop(context.Background(), Cleanup{Name: "db", Unusable: unusable, Deleting: time.Minute})
	if got.Done || got.RequeueAfter != 30*time.Second || got.Event.Reason != "" {
		t.Fatalf("blocked cleanup = %+v", got)
	}
	for _, want := range []string{"db", "connection gone", "1h0m0s", "the Thing go", "example.com/release=true"} {
		if !strings.Contains(got.Blocked, want) {
			t.Errorf("blocked message %q lacks %q", got.Blocked, want)
		}
	}
	// No reason given is still no login.
	if got := p.Drop(context.Background(), Cleanup{Name: "db", Deleting: time.Minute}); got.Done {
		t.Errorf("a cleanup without an admin login or a reason was done: %+v", got)
	}
	got = p.Drop(context.Background(), Cleanup{Name: "db", Unusable: unusable, Deleting: time.Hour})
	if !got.Done || got.Event.Type != corev1.EventTypeWarning || got.Event.Reason != ReasonCleanupAbandoned || !strings.Contains(got.Event.Message, "connection gone") {
		t.Errorf("timed-out cleanup = %+v", got)
	}
}

// The whole flow on a real server: made, unchanged on a second Ensure (no statement), a new password
// when the Secret is gone, a rotation, a name another object owns refused, dropped.
func TestProvisioner(t *testing.T) { onEveryVersion(t, testProvisioner) }

func testProvisioner(t *testing.T, srv testServer) {
	ctx := context.Background()
	admin := srv.operator(t)
	p := &Provisioner{Kind: "Thing", CheckPrivileges: true, Login: "the test login", UnreachableRetry: time.Second,
		LoginErrorReason: ReasonSQLFailed, DroppedReason: "Dropped"}
	owner := Owner{Kind: "Thing", Namespace: "ns", Name: "a", UID: "uid-a"}
	req := Request{UID: types.UID("uid-a"), Admin: admin, Name: "prov_a", Owner: owner}

	first, err := p.Ensure(ctx, req)
	if err != nil || !first.Ready() || !first.NewPassword || first.Updated == "" {
		t.Fatalf("first Ensure = %+v, %v", first, err)
	}
	if first.Login.User != "prov_a" || first.Login.Database != "prov_a" || first.Login.Host != admin.Host {
		t.Errorf("login = %+v", first.Login)
	}
	if err := CheckLogin(ctx, first.Login); err != nil {
		t.Fatalf("the role's login does not work: %v", err)
	}

	// The Secret holds the password: kept, nothing sent.
	live := &corev1.Secret{Data: map[string][]byte{KeyPassword: []byte(first.Login.Password)}}
	req.Live = live
	again, err := p.Ensure(ctx, req)
	if err != nil || !again.Ready() || again.NewPassword || again.Updated != "" || again.Login.Password != first.Login.Password {
		t.Errorf("unchanged Ensure = %+v, %v", again, err)
	}

	// A rotation the Secret does not answer yet: a new password, set on the role.
	req.Rotation = "1"
	rotated, err := p.Ensure(ctx, req)
	if err != nil || !rotated.Ready() || !rotated.NewPassword || rotated.Login.Password == first.Login.Password {
		t.Fatalf("rotated Ensure = %+v, %v", rotated, err)
	}
	if err := CheckLogin(ctx, rotated.Login); err != nil {
		t.Errorf("the rotated login does not work: %v", err)
	}
	if err := CheckLogin(ctx, first.Login); err == nil {
		t.Errorf("the former password still logs in")
	}

	// Hostile: another object asks for the same name. Refused, left untouched.
	other := Request{UID: types.UID("uid-b"), Admin: admin, Name: "prov_a", Owner: Owner{Kind: "Thing", Namespace: "ns", Name: "b", UID: "uid-b"}}
	claimed, err := p.Ensure(ctx, other)
	if err != nil || claimed.Reason != ReasonDatabaseClaimed || claimed.RequeueAfter != reconcile.ConflictRetry || !strings.Contains(claimed.Message, "ns/a") {
		t.Errorf("claimed Ensure = %+v, %v", claimed, err)
	}
	if err := CheckLogin(ctx, rotated.Login); err != nil {
		t.Errorf("the refused claimant changed the role: %v", err)
	}
	// Its cleanup leaves them on the server too.
	if got := p.Drop(ctx, Cleanup{Admin: &admin, Name: "prov_a", Owner: other.Owner}); !got.Done || got.Event.Reason != ReasonDatabaseClaimed {
		t.Errorf("claimant's Drop = %+v", got)
	}
	if err := CheckLogin(ctx, rotated.Login); err != nil {
		t.Errorf("the claimant's cleanup dropped the role: %v", err)
	}
	// Control: the same request under a free name is made.
	other.Name = "prov_b"
	if free, err := p.Ensure(ctx, other); err != nil || !free.Ready() {
		t.Errorf("Ensure under a free name = %+v, %v", free, err)
	}

	// A login without CREATEROLE and CREATEDB is refused before anything is sent.
	weak := srv.settings("prov_a", rotated.Login.Password, "postgres")
	refused, err := p.Ensure(ctx, Request{UID: "uid-c", Admin: weak, Name: "prov_c", Owner: Owner{Kind: "Thing", Namespace: "ns", Name: "c", UID: "uid-c"}})
	if err != nil || refused.Reason != ReasonInsufficientPrivileges || !strings.Contains(refused.Message, "the test login") {
		t.Errorf("Ensure with a weak login = %+v, %v", refused, err)
	}
	// A wrong password is an authentication failure.
	bad := admin
	bad.Password = "wrong"
	if got, err := p.Ensure(ctx, Request{UID: "uid-d", Admin: bad, Name: "prov_d", Owner: owner}); err != nil || got.Reason != ReasonAuthenticationFailed {
		t.Errorf("Ensure with a wrong password = %+v, %v", got, err)
	}

	for _, r := range []Request{req, other} {
		got := p.Drop(ctx, Cleanup{UID: r.UID, Admin: &admin, Name: r.Name, Owner: r.Owner})
		if !got.Done || got.Event.Reason != "Dropped" || !strings.Contains(got.Event.Message, "DROP ROLE") {
			t.Errorf("Drop %s = %+v", r.Name, got)
		}
	}
	if err := CheckLogin(ctx, rotated.Login); err == nil {
		t.Errorf("the dropped role still logs in")
	}
}
