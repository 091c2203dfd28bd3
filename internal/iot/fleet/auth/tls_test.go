package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/testutil/pki"
)

// connectTLS connects as c and proves the connection is authorized by a request only the operator's
// permissions allow ($JS.API.INFO), or returns why it failed.
func connectTLS(url string, c auth.Client) error {
	nc, err := fleettest.ConnectAs(url, c, nats.MaxReconnects(0), nats.Timeout(5*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = nc.RequestWithContext(ctx, "$JS.API.INFO", nil)
	return err
}

// tlsRefused says whether err is a failed TLS handshake (the server's certificate refused by the client,
// or the client's by the server, which closes the connection after its side of the handshake).
func tlsRefused(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "x509") || strings.Contains(err.Error(), "tls"))
}

// TestTLS: the authorized server with a certificate of a private CA accepts a client that trusts that CA
// (auth.Client.CAFile), and the handshake fails for a client that trusts the system's roots or another
// CA. A server that verifies clients refuses a client without a certificate, or with one another CA
// signed.
func TestTLS(t *testing.T) {
	ca := pki.TestCA(t, "fleet")
	other := pki.TestCA(t, "other")
	caFile, otherCAFile := ca.CAFile(t), other.CAFile(t)
	certFile, keyFile := ca.ServerFiles(t, "nats")

	t.Run("server certificate", func(t *testing.T) {
		a := fleettest.StartAuthorized(t, &fleettest.ServerTLS{CertFile: certFile, KeyFile: keyFile})
		if !strings.Contains(a.ClientURL(), "://127.0.0.1:") {
			t.Fatalf("client URL %s", a.ClientURL())
		}
		if err := connectTLS(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds, CAFile: caFile}); err != nil {
			t.Errorf("control, trusting the server's CA: %v", err)
		}
		for name, c := range map[string]auth.Client{
			"the system's roots": {CredentialsFile: a.OperatorCreds},
			"another CA":         {CredentialsFile: a.OperatorCreds, CAFile: otherCAFile},
		} {
			if err := connectTLS(a.ClientURL(), c); !tlsRefused(err) {
				t.Errorf("trusting %s: %v, want a refused certificate", name, err)
			}
		}
		// TLS does not replace the credentials: without them the server refuses the client.
		if err := connectTLS(a.ClientURL(), auth.Client{CAFile: caFile}); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("trusting the CA without credentials: %v, want an authorization violation", err)
		}
	})

	t.Run("client certificates", func(t *testing.T) {
		a := fleettest.StartAuthorized(t, &fleettest.ServerTLS{CertFile: certFile, KeyFile: keyFile, ClientCA: caFile})
		clientCert, clientKey := ca.ClientFiles(t, "operator")
		if err := connectTLS(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds, CAFile: caFile, CertFile: clientCert, KeyFile: clientKey}); err != nil {
			t.Errorf("control, with a client certificate of the CA: %v", err)
		}
		if err := connectTLS(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds, CAFile: caFile}); !tlsRefused(err) {
			t.Errorf("without a client certificate: %v, want the handshake refused", err)
		}
		foreignCert, foreignKey := other.ClientFiles(t, "intruder")
		if err := connectTLS(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds, CAFile: caFile, CertFile: foreignCert, KeyFile: foreignKey}); !tlsRefused(err) {
			t.Errorf("with a client certificate of another CA: %v, want the handshake refused", err)
		}
	})

	t.Run("a certificate without its key", func(t *testing.T) {
		if _, err := (auth.Client{CertFile: certFile}).Options(); err == nil {
			t.Error("a client certificate without its key: no error")
		}
	})
}
