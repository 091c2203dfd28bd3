package auth

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// Client is how a fleet process (the operator, an agent, the command line) authenticates to NATS and
// verifies it.
type Client struct {
	// CredentialsFile is a .creds file issued by fleet-auth; its role and name choose the inbox prefix
	// the user's permissions allow. Optional.
	CredentialsFile string
	// CAFile is a PEM bundle of the CAs that sign the server's certificate; setting it requires TLS.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, for a server that verifies clients.
	CertFile, KeyFile string
	// User and Password authenticate with a user and password instead of credentials (NATS_USER and
	// NATS_PASSWORD in the environment of each fleet process); Dial sends them when User is set.
	User, Password string
}

// Options are the nats.Options that authenticate as c says: the credentials with the inbox prefix
// their permissions allow, and TLS.
func (c Client) Options() ([]nats.Option, error) {
	var opts []nats.Option
	if c.CredentialsFile != "" {
		b, err := os.ReadFile(c.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("read NATS credentials: %w", err)
		}
		_, name, r, err := UserOf(b)
		if err != nil {
			return nil, fmt.Errorf("read NATS credentials %s: %w", c.CredentialsFile, err)
		}
		opts = append(opts, nats.UserCredentials(c.CredentialsFile))
		if r != "" {
			opts = append(opts, nats.CustomInboxPrefix(InboxPrefix(r, name)))
		}
	}
	if c.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.CAFile))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("a NATS client certificate needs both its certificate and its key file")
	}
	if c.CertFile != "" {
		opts = append(opts, nats.ClientCert(c.CertFile, c.KeyFile))
	}
	return opts, nil
}

// Requester is who c's user is in a log or events request (agent.RequestLogs): the role and name of its
// credentials, which are the only requester their permissions let it name and whose answers only it may
// receive. Without credentials (a user and password, or a server without authorization, where the
// server vouches for nothing), it is the role "user" named after User, or "anonymous".
func (c Client) Requester() (fleet.Requester, error) {
	if c.CredentialsFile == "" {
		name := "anonymous"
		if c.User != "" {
			name = c.User
		}
		r := fleet.Requester{Role: "user", Name: name}
		return r, r.Valid()
	}
	b, err := os.ReadFile(c.CredentialsFile)
	if err != nil {
		return fleet.Requester{}, fmt.Errorf("read NATS credentials: %w", err)
	}
	_, name, r, err := UserOf(b)
	if err != nil {
		return fleet.Requester{}, fmt.Errorf("read NATS credentials %s: %w", c.CredentialsFile, err)
	}
	if r == "" {
		return fleet.Requester{}, fmt.Errorf("NATS credentials %s name no fleet role: issue them with fleet-auth", c.CredentialsFile)
	}
	return Requester(r, name), nil
}
