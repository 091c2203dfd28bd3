package auth

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
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
