package iot

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// Broker is what a DeviceCredential needs of its FleetBroker: where its authority is kept and how to
// reach its servers.
type Broker struct {
	// AuthoritySecret names the Secret, in the broker's namespace, that holds the broker's authority
	// (auth.Authority.Data's keys).
	AuthoritySecret string
	// URL is the servers' client URL (several, comma-separated, for nats.Connect).
	URL string
	// Servers is how many servers the broker runs: how many answers a pushed account update waits for.
	Servers int
	// Options are the connection's other options (the CA of the servers' certificate).
	Options []nats.Option
}

// Brokers finds FleetBrokers for the DeviceCredential controller.
type Brokers interface {
	// Broker is the broker named name in namespace, or an error for which apierrors.IsNotFound holds
	// when there is none.
	Broker(ctx context.Context, namespace, name string) (Broker, error)
}

// fleetBrokers are the FleetBrokers themselves, read from the API server on each use (a credential is
// issued or revoked rarely; the broker's Secrets are never cached).
type fleetBrokers struct{ reader client.Reader }

// Broker is the FleetBroker namespace/name as a DeviceCredential uses it: its authority Secret (which
// need not be Ready to issue), its client URL and server count, and with spec.tls the CA of its
// certificate (a revocation's push waits for it).
func (f fleetBrokers) Broker(ctx context.Context, namespace, name string) (Broker, error) {
	var b iotv1.FleetBroker
	if err := f.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &b); err != nil {
		return Broker{}, err // NotFound passes through: the credential says BrokerNotFound
	}
	out := Broker{AuthoritySecret: brokerAuthoritySecretOf(&b), URL: b.Status.ClientURL, Servers: int(b.Spec.Servers)}
	if out.URL == "" {
		out.URL = brokerClientURL(&b)
	}
	if b.Spec.TLS != nil {
		var certs corev1.Secret
		if err := f.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: brokerTLSSecretName(&b)}, &certs); err != nil {
			if apierrors.IsNotFound(err) { // the broker's certificate, not the broker, is missing: retried
				return Broker{}, fmt.Errorf("the certificate Secret of FleetBroker %s/%s is not there yet", namespace, name)
			}
			return Broker{}, err
		}
		opts, err := NATSOptions{CA: certs.Data["ca.crt"]}.inMemory()
		if err != nil {
			return Broker{}, fmt.Errorf("FleetBroker %s/%s's certificate: %w", namespace, name, err)
		}
		out.Options = opts
	}
	return out, nil
}

// pushTimeout bounds one push of the account JWT to the broker's servers, the connection included.
const pushTimeout = 10 * time.Second

// pushAccount connects to b's servers as a user of the system account that a's key signs, and pushes
// a's account JWT; it returns the names of the servers that saved it.
func pushAccount(ctx context.Context, b Broker, a *auth.Authority) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	token, seed, err := a.PushUser(time.Minute)
	if err != nil {
		return nil, err
	}
	opts := append([]nats.Option{nats.UserJWTAndSeed(token, string(seed)), nats.Timeout(pushTimeout / 2),
		nats.MaxReconnects(0), nats.Name("platform-operator devicecredential")}, b.Options...)
	nc, err := nats.Connect(b.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to the broker's servers as the system account: %w", err)
	}
	defer nc.Close()
	return auth.PushAccount(ctx, nc, a.AccountJWT, b.Servers)
}

// readAuthority reads the broker's authority Secret from the API server (never a cache: its data is
// what a revocation rewrites, under the Secret's resourceVersion).
func readAuthority(ctx context.Context, c client.Reader, namespace string, b Broker) (*corev1.Secret, *auth.Authority, error) {
	sec := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: b.AuthoritySecret}, sec); err != nil {
		return nil, nil, err
	}
	a, err := auth.FromData(sec.Data)
	if err != nil {
		return nil, nil, fmt.Errorf("the broker's authority Secret %s: %w", b.AuthoritySecret, err)
	}
	return sec, a, nil
}
