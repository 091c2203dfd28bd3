package iot

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// noBrokers is the Brokers of an operator without FleetBroker support: none is ever found.
type noBrokers struct{}

func (noBrokers) Broker(_ context.Context, _, name string) (Broker, error) {
	return Broker{}, apierrors.NewNotFound(schema.GroupResource{Group: "iot.nationtech.io", Resource: "fleetbrokers"}, name)
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
