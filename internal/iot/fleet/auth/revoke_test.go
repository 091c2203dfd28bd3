package auth_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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
