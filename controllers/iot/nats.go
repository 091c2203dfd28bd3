package iot

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// NATSOptions are how the operator reaches the fleet's NATS server.
type NATSOptions struct {
	// URL is the server's URL (nats://host:4222); empty runs the iot controller without NATS.
	URL string
	// CredentialsFile is a NATS .creds file (user JWT and nkey seed), mounted from a Secret; optional.
	CredentialsFile string
	// CAFile, CertFile and KeyFile are the TLS CA bundle of the server and the operator's client
	// certificate (auth.Client); optional.
	CAFile, CertFile, KeyFile string
	// User and Password authenticate with a user and password instead; optional.
	User, Password string
	// HeartbeatTTL is how long a device counts as alive after its last heartbeat.
	HeartbeatTTL time.Duration
}

// Connect connects to NATS (reconnecting forever once connected) and opens the fleet's buckets, giving
// up after timeout. The returned function closes the connection.
func Connect(ctx context.Context, o NATSOptions, timeout time.Duration) (*store.Store, func(), error) {
	// The credentials' role picks the inbox prefix their permissions allow (docs/fleet.md).
	c := auth.Client{CredentialsFile: o.CredentialsFile, CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile, User: o.User, Password: o.Password}
	nc, js, err := c.Dial(o.URL, nats.Name("platform-operator"), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second), nats.Timeout(timeout))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w", o.URL, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := store.Open(ctx, js, o.HeartbeatTTL)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return st, nc.Close, nil
}
