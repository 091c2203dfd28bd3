package auth_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// TestRevoke: once a device's credentials are revoked (Authority.Revoke, the configuration rewritten and
// the server reloaded), the server closes that device's connection and refuses it a new one, while
// another device's credentials and new credentials issued for the same device still connect.
func TestRevoke(t *testing.T) {
	_, a, _, _ := startWithOperator(t)
	leaked := issue(t, a, auth.RoleDevice, "pi-17")
	other := issue(t, a, auth.RoleDevice, "pi-18")
	closed := make(chan struct{})
	live, err := fleettest.ConnectAs(a.ClientURL(), auth.Client{CredentialsFile: leaked}, nats.MaxReconnects(0),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // the revocation, expected

	if err != nil {
		t.Fatalf("control, before the revocation: %v", err)
	}
	defer live.Close()
	dial := func(creds string) error {
		nc, err := nats.Connect(a.ClientURL(), nats.UserCredentials(creds), nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
		}
		return err
	}

	if err := a.Revoke(leaked); err != nil {
		t.Fatal(err)
	}
	if err := dial(leaked); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("the revoked credentials: %v, want an authorization violation", err)
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Error("the revoked device's open connection was not closed")
	}
	if err := dial(other); err != nil {
		t.Errorf("control, another device: %v", err)
	}
	// Revocation is by the user's key, not its name: the device gets new credentials.
	if err := dial(issue(t, a, auth.RoleDevice, "pi-17")); err != nil {
		t.Errorf("new credentials for the same device: %v", err)
	}
}

// TestUpdatePermissions: an authority made by an older release carries that release's templates in its
// account JWT (here the device template before requests named their requester: a response permission and
// the subject fleet.v2.logs.<device>). Once fleet-auth update-permissions re-signs it and the server
// reloads, an existing device credential gets this release's template: the new request subject may be
// subscribed, the old one no longer; before the update it is the other way round (the control).
func TestUpdatePermissions(t *testing.T) {
	_, a, _, _ := startWithOperator(t)
	ac, err := jwt.DecodeAccountClaims(a.Authority.AccountJWT)
	if err != nil {
		t.Fatal(err)
	}
	for _, scope := range ac.SigningKeys {
		if us, ok := scope.(*jwt.UserScope); ok && us.Role == string(auth.RoleDevice) {
			old := auth.Device()
			old.Sub.Allow = jwt.StringList{"_INBOX_{{name()}}.>", "fleet.v2.logs.{{name()}}", "fleet.v2.events.{{name()}}"}
			old.Resp = &jwt.ResponsePermission{MaxMsgs: 10001, Expires: 2 * time.Minute}
			us.Template.Permissions = old
		}
	}
	if a.Authority.AccountJWT, err = ac.Encode(a.Authority.Operator); err != nil {
		t.Fatal(err)
	}
	write := func() {
		t.Helper()
		if err := a.Authority.Write(filepath.Join(a.Dir, "authority")); err != nil {
			t.Fatal(err)
		}
		if err := a.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	write()
	creds := issue(t, a, auth.RoleDevice, "dev-a")
	d := connect(t, a, creds)
	allowed(t, "before: the old template's subject", d.receiveSoon("fleet.v2.logs.dev-a"))
	d.refused(t, "before: the new template's subject", d.receive(fleet.LogsServeSubject("dev-a")))

	if err := a.Authority.UpdatePermissions(); err != nil {
		t.Fatal(err)
	}
	write()
	d = connect(t, a, creds)
	allowed(t, "after: the new template's subject", d.receiveSoon(fleet.LogsServeSubject("dev-a")))
	d.refused(t, "after: the old template's subject", d.receive("fleet.v2.logs.dev-a"))
}

// receiveSoon subscribes to subj and succeeds when the server has not refused it within a flush.
func (c *client) receiveSoon(subj string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		sub, err := c.nc.SubscribeSync(subj)
		if err != nil {
			return err
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := c.nc.FlushWithContext(ctx); err != nil {
			return err
		}
		select {
		case err := <-c.errs:
			return err
		case <-time.After(200 * time.Millisecond):
			return nil
		}
	}
}
