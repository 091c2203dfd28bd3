package iot

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"

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

	// Broker, when set (--iot-fleet-broker), is the FleetBroker the operator runs and connects to: its
	// client URL, the operator's credentials and the TLS CA are read from the API server before every
	// attempt (resolveBroker), and the buckets get its replica count. URL then only overrides the
	// broker's client URL (tests reach an in-process server at 127.0.0.1; the flags refuse both).
	Broker *types.NamespacedName
	// Credentials and CA are a .creds file's content and a PEM CA bundle held in memory (read from the
	// broker's Secrets): they work as CredentialsFile and CAFile, without a file.
	Credentials, CA []byte
}

// Redacted is the URL without credentials: what the operator shows of it in a status, an event or a
// log line. A NATS URL may carry user:password (or a token) in its userinfo; each URL of a
// comma-separated list loses it, and one that does not parse is shown as "<unparsable NATS URL>".
func (o NATSOptions) Redacted() string {
	if o.Broker != nil && o.URL == "" {
		return "FleetBroker " + o.Broker.String()
	}
	return RedactURL(o.URL)
}

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
	extra, err := o.inMemory()
	if err != nil {
		return nil, nil, err
	}
	extra = append(extra, nats.Name("platform-operator"), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second), nats.Timeout(timeout))
	nc, js, err := c.Dial(o.URL, extra...)
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

// inMemory are the nats options of Credentials and CA: the user's JWT and seed with the inbox prefix
// their role allows (as auth.Client does for a file), and TLS verified against the CA.
func (o NATSOptions) inMemory() ([]nats.Option, error) {
	var opts []nats.Option
	if len(o.Credentials) > 0 {
		token, err := jwt.ParseDecoratedJWT(o.Credentials)
		if err != nil {
			return nil, fmt.Errorf("read the NATS credentials: %w", err)
		}
		kp, err := nkeys.ParseDecoratedNKey(o.Credentials)
		if err != nil {
			return nil, fmt.Errorf("read the NATS credentials' seed: %w", err)
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, fmt.Errorf("read the NATS credentials' seed: %w", err)
		}
		opts = append(opts, nats.UserJWTAndSeed(token, string(seed)))
		if _, name, r, err := auth.UserOf(o.Credentials); err == nil && r != "" {
			opts = append(opts, nats.CustomInboxPrefix(auth.InboxPrefix(r, name)))
		}
	}
	if len(o.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.CA) {
			return nil, errors.New("the NATS server's CA bundle holds no PEM certificate")
		}
		opts = append(opts, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	return opts, nil
}

// errBrokerNotReady is resolveBroker's error while the broker is not Ready: the connector retries.
var errBrokerNotReady = errors.New("not Ready yet")

// resolveBroker is o with what the FleetBroker o.Broker says: its client URL (unless o.URL overrides
// it), the operator's credentials from status.operatorCredentialsSecret, the CA of its certificate with
// spec.tls, and its bucket replica count. It waits (an error) until the broker is Ready. Secrets are read
// with reader, the API server: the operator caches no Secret data.
func resolveBroker(ctx context.Context, reader client.Reader, o NATSOptions) (NATSOptions, error) {
	var b iotv1.FleetBroker
	if err := reader.Get(ctx, *o.Broker, &b); err != nil {
		return o, fmt.Errorf("read FleetBroker %s: %w", o.Broker, err)
	}
	if !meta.IsStatusConditionTrue(b.Status.Conditions, iotv1.ConditionReady) || b.Status.OperatorCredentialsSecret == "" {
		return o, fmt.Errorf("FleetBroker %s: %w", o.Broker, errBrokerNotReady)
	}
	var creds corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Status.OperatorCredentialsSecret}, &creds); err != nil {
		return o, fmt.Errorf("read the operator's credentials of FleetBroker %s: %w", o.Broker, err)
	}
	o.Credentials = creds.Data[BrokerCredentialsKey]
	if len(o.Credentials) == 0 {
		return o, fmt.Errorf("the operator's credentials Secret %s/%s has no %s", b.Namespace, b.Status.OperatorCredentialsSecret, BrokerCredentialsKey)
	}
	if b.Spec.TLS != nil {
		var certs corev1.Secret
		if err := reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: brokerTLSSecretName(&b)}, &certs); err != nil {
			return o, fmt.Errorf("read the certificate of FleetBroker %s: %w", o.Broker, err)
		}
		if o.CA = certs.Data["ca.crt"]; len(o.CA) == 0 {
			return o, fmt.Errorf("the certificate Secret %s/%s has no ca.crt: the broker's issuer must write its CA", b.Namespace, brokerTLSSecretName(&b))
		}
	}
	if o.URL == "" {
		o.URL = b.Status.ClientURL
	}
	o.Limits.Replicas = int(b.Status.Replicas)
	return o, nil
}
