package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// parse writes conf and reads it with nats-server's own configuration parser, as the server would.
func parse(t *testing.T, conf string) (*server.Options, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return server.ProcessConfigFile(path)
}

func TestRenderIsWhatNATSServerReads(t *testing.T) {
	t.Setenv(ServerNameVar, "fleet-1")
	a, err := auth.Init()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := Config{Client: "127.0.0.1:14222", Monitor: "127.0.0.1:18222", StoreDir: filepath.Join(dir, "js"), ResolverDir: filepath.Join(dir, "jwt")}
	three := base
	three.Cluster, three.Route = "fleet", "127.0.0.1:16222"
	three.Routes = []string{"127.0.0.1:16221", "127.0.0.1:16222", "127.0.0.1:16223"}
	three.RouteUser, three.RoutePassword = "route", "s3cretRoute"
	three.MaxFileStore = 1 << 30

	for _, tc := range []struct {
		name    string
		c       Config
		cluster bool
	}{{"one server", base, false}, {"three servers", three, true}} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := Render(tc.c, a)
			if err != nil {
				t.Fatal(err)
			}
			o, err := parse(t, conf)
			if err != nil {
				t.Fatalf("nats-server refuses the rendered configuration: %v\n%s", err, conf)
			}
			if o.ServerName != "fleet-1" || !o.JetStream || o.StoreDir != tc.c.StoreDir || o.Port != 14222 || o.HTTPPort != 18222 {
				t.Errorf("server name %q, jetstream %v, store %q, port %d, http %d", o.ServerName, o.JetStream, o.StoreDir, o.Port, o.HTTPPort)
			}
			if len(o.TrustedOperators) != 1 || o.SystemAccount == "" || o.AccountResolver == nil {
				t.Errorf("the permission model is missing: operators %d, system account %q, resolver %v", len(o.TrustedOperators), o.SystemAccount, o.AccountResolver)
			}
			if _, ok := o.AccountResolver.(*server.DirAccResolver); !ok {
				t.Errorf("resolver %T, want a FULL directory resolver (revocations pushed and kept)", o.AccountResolver)
			}
			if tc.cluster {
				if o.Cluster.Name != "fleet" || o.Cluster.Port != 16222 || len(o.Routes) != 3 || o.Cluster.Username != "route" || o.JetStreamMaxStore != 1<<30 {
					t.Errorf("cluster %q port %d routes %d user %q max store %d", o.Cluster.Name, o.Cluster.Port, len(o.Routes), o.Cluster.Username, o.JetStreamMaxStore)
				}
			} else if len(o.Routes) != 0 || o.Cluster.Port != 0 {
				t.Errorf("a single server has routes %v, cluster port %d", o.Routes, o.Cluster.Port)
			}
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	a, err := auth.Init()
	if err != nil {
		t.Fatal(err)
	}
	ok := Config{Client: "127.0.0.1:4222", StoreDir: "/js", ResolverDir: "/jwt", Cluster: "c", Route: "127.0.0.1:6222",
		Routes: []string{"a:1", "b:1", "c:1"}, RouteUser: "route", RoutePassword: "pw"}
	if _, err := Render(ok, a); err != nil {
		t.Fatalf("control: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"no store":                func(c *Config) { c.StoreDir = "" },
		"no route credentials":    func(c *Config) { c.RoutePassword = "" },
		"password with an @":      func(c *Config) { c.RoutePassword = "p@ss" },
		"cluster without a name":  func(c *Config) { c.Cluster = "" },
		"quote in the route user": func(c *Config) { c.RouteUser = `r"` },
	} {
		c := ok
		mutate(&c)
		if _, err := Render(c, a); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
	if _, err := Render(ok, &auth.Authority{}); err == nil || !strings.Contains(err.Error(), "operator JWT") {
		t.Errorf("an authority without JWTs: %v", err)
	}
}
