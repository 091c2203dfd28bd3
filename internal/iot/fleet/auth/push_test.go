package auth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/broker"
)

// startBroker boots one nats-server from broker.Render's configuration of a (a FULL account resolver).
func startBroker(t *testing.T, a *auth.Authority) string {
	t.Helper()
	t.Setenv(broker.ServerNameVar, "fleet-0")
	dir := t.TempDir()
	conf, err := broker.Render(broker.Config{Client: "127.0.0.1:-1", StoreDir: filepath.Join(dir, "js"), ResolverDir: filepath.Join(dir, "jwt")}, a)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoSigs = true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL()
}

func pushConn(t *testing.T, url string, a *auth.Authority, opts ...nats.Option) *nats.Conn {
	t.Helper()
	token, seed, err := a.PushUser(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, append([]nats.Option{nats.UserJWTAndSeed(token, string(seed)), nats.MaxReconnects(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func dialCreds(t *testing.T, url string, creds []byte) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.creds")
	if err := auth.WriteCreds(path, creds); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.UserCredentials(path), nats.MaxReconnects(0))
	if err == nil {
		nc.Close()
	}
	return err
}

// TestPushAccount: a revocation pushed to the broker's server (no reload, no file) refuses the revoked
// credentials at once and lets the others in. The control: before the push the credentials connect.
// An older account JWT pushed after it (a late push of an earlier revocation) does replace it - the
// server takes any pushed JWT - which is why a revoker pushes the latest last
// (controllers/iot DeviceCredential's pushCurrent).
func TestPushAccount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := auth.Init()
	if err != nil {
		t.Fatal(err)
	}
	url := startBroker(t, a)
	leaked, _ := a.Issue(auth.RoleDevice, "pi-17", 0)
	other, _ := a.Issue(auth.RoleDevice, "pi-18", 0)
	if err := dialCreds(t, url, leaked); err != nil {
		t.Fatalf("control, before the push: %v", err)
	}
	key, _, _, _ := auth.UserOf(leaked)
	otherKey, _, _, _ := auth.UserOf(other)

	// An earlier revocation (of pi-18) that will arrive late.
	early := *a
	if changed, err := early.RevokeLater(ctx, otherKey); err != nil || !changed {
		t.Fatalf("revoke: %v %v", changed, err)
	}
	a.AccountJWT = early.AccountJWT
	if changed, err := a.RevokeLater(ctx, key); err != nil || !changed {
		t.Fatalf("revoke: %v %v", changed, err)
	}
	ea, _ := jwt.DecodeAccountClaims(early.AccountJWT)
	la, _ := jwt.DecodeAccountClaims(a.AccountJWT)
	if la.IssuedAt <= ea.IssuedAt {
		t.Fatalf("the later account JWT is issued at %d, the earlier at %d: want later", la.IssuedAt, ea.IssuedAt)
	}
	if changed, err := a.RevokeLater(ctx, key); err != nil || changed {
		t.Errorf("revoking an already revoked key: changed %v, %v", changed, err)
	}

	nc := pushConn(t, url, a)
	servers, err := auth.PushAccount(ctx, nc, a.AccountJWT, 1)
	if err != nil || len(servers) != 1 || servers[0] != "fleet-0" {
		t.Fatalf("push: %v %v", servers, err)
	}
	if err := dialCreds(t, url, leaked); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("the revoked credentials: %v, want an authorization violation", err)
	}
	if _, err := auth.PushAccount(ctx, nc, early.AccountJWT, 1); err != nil {
		t.Fatalf("the late push: %v", err)
	}
	if err := dialCreds(t, url, leaked); err != nil {
		t.Errorf("after a late push of an older account JWT, nats-server %s no longer takes every pushed JWT (%v): revisit pushCurrent", server.VERSION, err)
	}
	if err := dialCreds(t, url, other); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("pi-18, revoked in both JWTs: %v", err)
	}
	if _, err := auth.PushAccount(ctx, nc, a.AccountJWT, 1); err != nil {
		t.Fatal(err)
	}
	if err := dialCreds(t, url, leaked); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("the latest pushed again, the revoked credentials: %v", err)
	}
	fresh, _ := a.Issue(auth.RoleDevice, "pi-17", 0)
	if err := dialCreds(t, url, fresh); err != nil {
		t.Errorf("new credentials for the same device: %v", err)
	}
}

// TestPushUserMayOnlyPush: the system account's push user can publish account updates and nothing
// else of the system account (a server shutdown request, say).
func TestPushUserMayOnlyPush(t *testing.T) {
	a, err := auth.Init()
	if err != nil {
		t.Fatal(err)
	}
	url := startBroker(t, a)
	errs := make(chan error, 8)
	nc := pushConn(t, url, a, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err := nc.Publish("$SYS.REQ.SERVER.PING", nil); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("publish to $SYS.REQ.SERVER.PING: %v, want a permissions violation", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the push user published to $SYS.REQ.SERVER.PING")
	}
	// The control: the one subject it may publish.
	if _, err := auth.PushAccount(context.Background(), nc, a.AccountJWT, 1); err != nil {
		t.Errorf("push: %v", err)
	}
	a.System = nil
	if _, _, err := a.PushUser(time.Minute); err == nil {
		t.Error("a push user without the system account's key")
	}
}
