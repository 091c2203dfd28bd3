package iot

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
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
	// Limits size the buckets (--iot-fleet-max-devices, --iot-fleet-deployments-per-device); the
	// defaults when zero.
	Limits store.Limits
}

// Redacted is the URL without credentials: what the operator shows of it in a status, an event or a
// log line. A NATS URL may carry user:password (or a token) in its userinfo; each URL of a
// comma-separated list loses it, and one that does not parse is shown as "<unparsable NATS URL>".
func (o NATSOptions) Redacted() string { return RedactURL(o.URL) }

// RedactURL is NATSOptions.Redacted for any URL list.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if !strings.Contains(p, "://") {
			p = "nats://" + p // what nats.Connect assumes
		}
		u, err := url.Parse(p)
		if err != nil || u.Host == "" {
			parts[i] = "<unparsable NATS URL>"
			continue
		}
		parts[i] = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	}
	return strings.Join(parts, ",")
}

// Connect connects to NATS (reconnecting forever once connected) and opens the fleet's buckets, giving
// up after timeout. The returned function closes the connection.
func Connect(ctx context.Context, o NATSOptions, timeout time.Duration) (*store.Store, func(), error) {
	// The credentials' role picks the inbox prefix their permissions allow (docs/fleet.md).
	c := auth.Client{CredentialsFile: o.CredentialsFile, CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile, User: o.User, Password: o.Password}
	nc, js, err := c.Dial(o.URL, nats.Name("platform-operator"), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second), nats.Timeout(timeout))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w", o.Redacted(), redactError(err, o.URL))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	limits := o.Limits
	if limits.Devices <= 0 {
		limits.Devices = store.DefaultMaxDevices
	}
	if limits.DeploymentsPerDevice <= 0 {
		limits.DeploymentsPerDevice = store.DefaultDeploymentsPerDevice
	}
	st, err := store.OpenWithLimits(ctx, js, o.HeartbeatTTL, limits)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return st, nc.Close, nil
}

// redactError is err, or an error of the same text with every password of urls replaced, should the
// client library ever quote the URL it was given.
func redactError(err error, urls string) error {
	msg := err.Error()
	out := msg
	for _, p := range strings.Split(urls, ",") {
		u, perr := url.Parse(strings.TrimSpace(p))
		if perr != nil || u.User == nil {
			continue
		}
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = strings.ReplaceAll(out, pw, "REDACTED")
		}
		if name := u.User.Username(); name != "" {
			out = strings.ReplaceAll(out, name+":", "REDACTED:")
		}
	}
	if out == msg {
		return err
	}
	return errors.New(out)
}
