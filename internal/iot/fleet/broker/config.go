// Package broker renders the configuration of the fleet's NATS servers when the operator runs them
// (a FleetBroker): one nats-server configuration file that every server of the StatefulSet reads, with
// JetStream, the cluster's routes and the fleet's permission model (auth.Authority) with an account
// resolver that keeps account updates (revocations) on disk and shares them across the cluster.
//
// The same function renders the file the StatefulSet mounts and the one the cluster tests boot three
// real nats-server processes from on 127.0.0.1: only the addresses and directories differ.
package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// ServerNameVar is the environment variable each server reads its name from (the StatefulSet sets it
// to the pod's name): JetStream clustering needs a stable, unique name per server.
const ServerNameVar = "SERVER_NAME"

// Ports the StatefulSet's servers listen on.
const (
	ClientPort  = 4222
	ClusterPort = 6222
	MonitorPort = 8222
)

// Config is one broker's server configuration.
type Config struct {
	// Cluster names the JetStream cluster; it must be the same on every server.
	Cluster string
	// Client, Route and Monitor are the host:port each server listens on for clients, for the other
	// servers, and for HTTP monitoring (healthz, for the probes); Monitor may be empty.
	Client, Route, Monitor string
	// Routes are host:port of every server's route listener, this server's own included (nats-server
	// skips it). One route (a single server) renders no cluster block.
	Routes []string
	// RouteUser and RoutePassword authenticate the servers to each other; required with more than one
	// route.
	RouteUser, RoutePassword string
	// StoreDir is JetStream's storage directory and ResolverDir the account resolver's.
	StoreDir, ResolverDir string
	// MaxFileStore is JetStream's file storage limit in bytes (0: the server's default, most of the
	// disk).
	MaxFileStore int64
	// ClientTLS, when set, makes clients connect with TLS; RouteTLS secures the routes.
	ClientTLS, RouteTLS *TLS
}

// TLS names a server's certificate files.
type TLS struct {
	CertFile, KeyFile, CAFile string
	// Verify requires and verifies a peer certificate (the routes: each server is the other's client).
	Verify bool
}

// Render is the nats-server configuration of c trusting a's operator, with a's system and fleet
// accounts preloaded into a FULL resolver (revocations pushed to one server reach the others and
// survive restarts).
func Render(c Config, a *auth.Authority) (string, error) {
	if err := c.validate(); err != nil {
		return "", err
	}
	trust, err := a.TrustConfig(fmt.Sprintf("resolver {\n  type: full\n  dir: %s\n  allow_delete: false\n  interval: \"2m\"\n  timeout: \"5s\"\n}\n", quote(c.ResolverDir)))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# The fleet's NATS server, written by platform-operator (docs/fleet-broker.md). Do not edit: the\n")
	w("# operator rewrites it.\n")
	w("server_name: $%s\n", ServerNameVar)
	w("listen: %s\n", quote(c.Client))
	if c.Monitor != "" {
		w("http: %s\n", quote(c.Monitor))
	}
	if c.ClientTLS != nil {
		w("tls {\n%s  timeout: 5\n}\n", c.ClientTLS.render("  "))
	}
	w("jetstream {\n  store_dir: %s\n", quote(c.StoreDir))
	if c.MaxFileStore > 0 {
		w("  max_file_store: %d\n", c.MaxFileStore)
	}
	w("}\n")
	if len(c.Routes) > 1 {
		w("cluster {\n  name: %s\n  listen: %s\n", quote(c.Cluster), quote(c.Route))
		w("  authorization {\n    user: %s\n    password: %s\n  }\n", quote(c.RouteUser), quote(c.RoutePassword))
		if c.RouteTLS != nil {
			w("  tls {\n%s    timeout: 5\n  }\n", c.RouteTLS.render("    "))
		}
		w("  routes: [\n")
		for _, r := range c.Routes {
			w("    %s\n", quote("nats-route://"+c.RouteUser+":"+c.RoutePassword+"@"+r))
		}
		w("  ]\n}\n")
	}
	b.WriteString(trust)
	return b.String(), nil
}

func (t *TLS) render(indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%scert_file: %s\n%skey_file: %s\n", indent, quote(t.CertFile), indent, quote(t.KeyFile))
	if t.CAFile != "" {
		fmt.Fprintf(&b, "%sca_file: %s\n", indent, quote(t.CAFile))
	}
	if t.Verify {
		fmt.Fprintf(&b, "%sverify: true\n", indent)
	}
	return b.String()
}

func (c Config) validate() error {
	var errs []error
	if c.Client == "" || c.StoreDir == "" || c.ResolverDir == "" {
		errs = append(errs, errors.New("the client listener, the JetStream and the resolver directories are required"))
	}
	if len(c.Routes) > 1 {
		if c.Cluster == "" || c.Route == "" {
			errs = append(errs, errors.New("a cluster needs a name and a route listener"))
		}
		if c.RouteUser == "" || c.RoutePassword == "" {
			errs = append(errs, errors.New("a cluster needs route credentials"))
		}
		if strings.ContainsAny(c.RouteUser+c.RoutePassword, ":@/ \"'\\\n") {
			errs = append(errs, errors.New("route credentials must not contain URL or quoting characters"))
		}
	}
	return errors.Join(errs...)
}

// quote is s as a quoted string of the NATS configuration format (JSON's quoting is a subset it reads).
func quote(s string) string { return strconv.Quote(s) }
