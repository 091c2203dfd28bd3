package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// Dial sends User and Password when set (NATS_USER and NATS_PASSWORD of every fleet process), opens
// JetStream, and returns the refusal of wrong ones as nats.Connect's error.
func TestDialUserPassword(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true, Username: "operator", Password: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	tests := []struct {
		name    string
		client  auth.Client
		wantErr error
	}{
		{name: "the right user and password", client: auth.Client{User: "operator", Password: "secret"}},
		{name: "a wrong password", client: auth.Client{User: "operator", Password: "guess"}, wantErr: nats.ErrAuthorization},
		{name: "no user", client: auth.Client{}, wantErr: nats.ErrAuthorization},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, js, err := tt.client.Dial(srv.ClientURL(), nats.Name("dial-test"), nats.Timeout(5*time.Second))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Dial: %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := js.AccountInfo(ctx); err != nil {
				t.Errorf("JetStream on the dialled connection: %v", err)
			}
		})
	}
}

// An unusable authentication setting is refused before any connection is tried.
func TestDialRefusesHalfAClientCertificate(t *testing.T) {
	_, _, err := auth.Client{CertFile: "client.pem"}.Dial("nats://127.0.0.1:1")
	if err == nil || errors.Is(err, nats.ErrNoServers) {
		t.Fatalf("Dial: %v, want the missing key refused", err)
	}
}
