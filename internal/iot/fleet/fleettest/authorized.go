package fleettest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// Authorized is a NATS server that enforces the fleet's permissions exactly as shipped: it runs with the
// configuration include that `fleet-auth init` writes, and issues credentials as `fleet-auth` does.
type Authorized struct {
	*Server
	// Dir holds the authority (keys, JWTs, nats-auth.conf), the server's configuration and the issued
	// credentials.
	Dir       string
	Authority *auth.Authority
	// OperatorCreds is the operator's .creds file.
	OperatorCreds string
}

// ServerTLS are the server's certificate and key and, when ClientCA is set, the CA whose client
// certificates it requires.
type ServerTLS struct {
	CertFile, KeyFile, ClientCA string
}

// StartAuthorized starts an authorized server on any port of 127.0.0.1 (with TLS when tlsFiles is not
// nil), stopped with tb.
func StartAuthorized(tb testing.TB, tlsFiles *ServerTLS) *Authorized {
	tb.Helper()
	a, err := StartAuthorizedServer(tlsFiles)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(a.Shutdown)
	return a
}

// StartAuthorizedServer is StartAuthorized for a caller without a testing.TB (the demo): stop it with
// Shutdown, which removes its directory.
func StartAuthorizedServer(tlsFiles *ServerTLS) (*Authorized, error) {
	dir, err := os.MkdirTemp("", "fleet-nats-auth-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Authorized, error) { return nil, errors.Join(err, os.RemoveAll(dir)) }
	authority, err := auth.Init()
	if err != nil {
		return fail(err)
	}
	if err := authority.Write(filepath.Join(dir, "authority")); err != nil {
		return fail(err)
	}
	conf := "host: 127.0.0.1\nport: -1\nno_sys_acc: false\n" +
		"jetstream { store_dir: " + strconv.Quote(filepath.Join(dir, "jetstream")) + " }\n" +
		"include ./authority/" + auth.ServerConfigFile + "\n"
	if tlsFiles != nil {
		conf += "tls {\n  cert_file: " + strconv.Quote(tlsFiles.CertFile) + "\n  key_file: " + strconv.Quote(tlsFiles.KeyFile) + "\n"
		if tlsFiles.ClientCA != "" {
			conf += "  ca_file: " + strconv.Quote(tlsFiles.ClientCA) + "\n  verify: true\n"
		}
		conf += "}\n"
	}
	confFile := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		return fail(err)
	}
	opts, err := server.ProcessConfigFile(confFile)
	if err != nil {
		return fail(fmt.Errorf("the shipped NATS configuration: %w", err))
	}
	opts.NoSigs, opts.NoLog = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		return fail(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return fail(errors.New("NATS server not ready in 10s"))
	}
	a := &Authorized{Server: &Server{Server: s, dir: dir, opts: opts}, Dir: dir, Authority: authority}
	if a.OperatorCreds, err = a.Creds(auth.RoleOperator, auth.OperatorUser); err != nil {
		a.Shutdown()
		return nil, err
	}
	return a, nil
}

// Creds issues the credentials of a user of role r named name into a .creds file, and returns its path.
func (a *Authorized) Creds(r auth.Role, name string) (string, error) {
	return a.CredsWithLabels(r, name, nil)
}

// CredsWithLabels is Creds with credential labels (a device's), as fleet-auth device --labels issues.
func (a *Authorized) CredsWithLabels(r auth.Role, name string, labels map[string]string) (string, error) {
	creds, err := a.Authority.IssueWithLabels(r, name, 0, labels)
	if err != nil {
		return "", err
	}
	path := filepath.Join(a.Dir, "creds", string(r)+"-"+name+".creds")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, auth.WriteCreds(path, creds)
}

// ConnectAs opens a client connection authenticated as c says (auth.Client.Dial, as the fleet's
// processes connect), reconnecting forever unless extra says otherwise.
func ConnectAs(url string, c auth.Client, extra ...nats.Option) (*nats.Conn, error) {
	nc, _, err := c.Dial(url, append(reconnecting(), extra...)...)
	return nc, err
}

// ConnectOperator is Connect with the operator's credentials: it opens (creates) the buckets.
func (a *Authorized) ConnectOperator(ctx context.Context, ttl time.Duration) (*nats.Conn, *store.Store, error) {
	return connect(a.ClientURL(), auth.Client{CredentialsFile: a.OperatorCreds}, func(js jetstream.JetStream) (*store.Store, error) {
		return store.Open(ctx, js, ttl)
	})
}

// ConnectDevice issues a device's credentials and binds to the buckets with them, as the agent does.
func (a *Authorized) ConnectDevice(ctx context.Context, id string) (*nats.Conn, *store.Store, error) {
	creds, err := a.Creds(auth.RoleDevice, id)
	if err != nil {
		return nil, nil, err
	}
	return connect(a.ClientURL(), auth.Client{CredentialsFile: creds}, func(js jetstream.JetStream) (*store.Store, error) {
		return store.Bind(ctx, js)
	})
}

// StartDevice runs a simulated device (StartDevice: the real agent, a fake runtime) on a connection of
// its own, authenticated with the device's own credentials, so that it can do only what a real device
// may. The connection closes when ctx ends.
//
// Its credentials carry labels as credential labels too (fleet-auth device --labels), and its record
// carries its credential, as cmd/fleet-agent's does: the operator started with AccountJWT trusts them.
func (a *Authorized) StartDevice(ctx context.Context, id string, labels map[string]string, rt *FakeRuntime) (*Device, error) {
	creds, err := a.CredsWithLabels(auth.RoleDevice, id, labels)
	if err != nil {
		return nil, err
	}
	token, err := auth.CredentialJWT(creds)
	if err != nil {
		return nil, err
	}
	nc, st, err := connect(a.ClientURL(), auth.Client{CredentialsFile: creds}, func(js jetstream.JetStream) (*store.Store, error) {
		return store.Bind(ctx, js)
	})
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", id, err)
	}
	context.AfterFunc(ctx, nc.Close)
	return StartDeviceInfo(ctx, st, fleet.DeviceInfo{ID: id, Labels: labels, Credential: token}, rt), nil
}

// AccountJWT is the path of the authority's account JWT: the operator's --iot-fleet-account-jwt.
func (a *Authorized) AccountJWT() string {
	return filepath.Join(a.Dir, "authority", auth.AccountJWTFile)
}

// StartFleet is StartFleet with each device on its own connection and credentials (StartDevice). Use it
// for a handful of devices: each holds a connection.
func (a *Authorized) StartFleet(ctx context.Context, prefix, fleetLabel string, n int) ([]*Device, error) {
	out := make([]*Device, 0, n)
	for i := range n {
		d, err := a.StartDevice(ctx, fmt.Sprintf("%s-%d", prefix, i), map[string]string{"fleet": fleetLabel}, nil)
		if err != nil {
			for _, d := range out {
				d.Stop()
			}
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Revoke revokes the credentials in the .creds file at path as `fleet-auth revoke` does (the account
// JWT re-signed with the user in its revocation list, the authority's files rewritten) and reloads the
// server's configuration, as an administrator does with `nats-server --signal reload`.
func (a *Authorized) Revoke(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	key, _, _, err := auth.UserOf(b)
	if err != nil {
		return err
	}
	if err := a.Authority.Revoke(key, time.Now()); err != nil {
		return err
	}
	if err := a.Authority.Write(filepath.Join(a.Dir, "authority")); err != nil {
		return err
	}
	return a.Reload()
}
