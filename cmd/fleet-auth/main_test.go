package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// TestCommands runs every subcommand in order, as an administrator would: init writes the authority
// (seeds 0600) and refuses to replace it; device, operator and viewer write 0600 .creds files of their
// role and name; a nats-server configured with the include init wrote accepts them; revoke rewrites the
// include, and after a reload the revoked device is refused while the other still connects.
func TestCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "authority")
	out := t.TempDir()
	must := func(cmd string, args ...string) {
		t.Helper()
		if err := run(cmd, append([]string{"--dir", dir}, args...)); err != nil {
			t.Fatalf("fleet-auth %s %s: %v", cmd, strings.Join(args, " "), err)
		}
	}
	must("init")
	for _, f := range []string{auth.OperatorSeedFile, auth.AccountSeedFile, auth.SystemSeedFile,
		auth.SigningKeyFile(auth.RoleDevice), auth.SigningKeyFile(auth.RoleOperator), auth.SigningKeyFile(auth.RoleViewer)} {
		mode(t, filepath.Join(dir, f), 0o600)
	}
	accountBefore := read(t, filepath.Join(dir, auth.AccountJWTFile))
	if err := run("init", []string{"--dir", dir}); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("init over an authority: %v, want a refusal", err)
	}
	if read(t, filepath.Join(dir, auth.AccountJWTFile)) != accountBefore {
		t.Error("the refused init replaced the account")
	}

	creds := map[string]string{}
	for _, c := range []struct {
		cmd  string
		args []string
		role auth.Role
		name string
	}{
		{"device", []string{"--id", "pi-17"}, auth.RoleDevice, "pi-17"},
		{"device", []string{"--id", "pi-18"}, auth.RoleDevice, "pi-18"},
		{"operator", nil, auth.RoleOperator, auth.OperatorUser},
		{"viewer", []string{"--name", "alice"}, auth.RoleViewer, "alice"},
	} {
		path := filepath.Join(out, c.name+".creds")
		must(c.cmd, append(c.args, "--out", path)...)
		mode(t, path, 0o600)
		_, name, role, err := auth.UserOf([]byte(read(t, path)))
		if err != nil || name != c.name || role != c.role {
			t.Errorf("%s: user %q role %q (%v), want %q %q", path, name, role, err, c.name, c.role)
		}
		creds[c.name] = path
	}
	for _, bad := range [][]string{{"device", "--id", "pi.17"}, {"device"}, {"viewer", "--name", "a b"}} {
		if err := run(bad[0], append([]string{"--dir", dir, "--out", filepath.Join(out, "bad.creds")}, bad[1:]...)); err == nil {
			t.Errorf("fleet-auth %s: no error", strings.Join(bad, " "))
		}
	}
	if _, err := os.Stat(filepath.Join(out, "bad.creds")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused issue wrote credentials: %v", err)
	}

	s := startServer(t, dir)
	dial := func(name string) error {
		nc, err := nats.Connect(s.ClientURL(), nats.UserCredentials(creds[name]), nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
		}
		return err
	}
	for _, name := range []string{"pi-17", "pi-18", auth.OperatorUser, "alice"} {
		if err := dial(name); err != nil {
			t.Errorf("%s before the revocation: %v", name, err)
		}
	}
	must("revoke", "--creds", creds["pi-17"])
	if read(t, filepath.Join(dir, auth.AccountJWTFile)) == accountBefore {
		t.Error("revoke did not rewrite the account")
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := dial("pi-17"); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("the revoked device: %v, want an authorization violation", err)
	}
	if err := dial("pi-18"); err != nil {
		t.Errorf("control, the other device: %v", err)
	}
}

// startServer starts nats-server with JetStream and the include init wrote, on any port of 127.0.0.1,
// from a configuration beside the authority's directory (nats-server resolves an include relative to
// the including file).
func startServer(t *testing.T, authority string) *server.Server {
	t.Helper()
	conf := filepath.Join(filepath.Dir(authority), "nats-server.conf")
	if err := os.WriteFile(conf, []byte("host: 127.0.0.1\nport: -1\n"+
		"jetstream { store_dir: "+strconv.Quote(filepath.Join(filepath.Dir(conf), "js"))+" }\n"+
		"include ./"+filepath.Base(authority)+"/"+auth.ServerConfigFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server refuses the configuration: %v", err)
	}
	opts.NoSigs, opts.NoLog = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready in 10s")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

func mode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %o, want %o", path, got, want)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDeviceLabels: fleet-auth device --labels issues credentials whose labels the operator's verifier
// (given the account.jwt init wrote) reads back exactly, case included; bad labels are refused, and a
// device issued without --labels has none (the control).
func TestDeviceLabels(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "authority")
	if err := run("init", []string{"--dir", dir}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pi.creds")
	if err := run("device", []string{"--dir", dir, "--id", "pi-1", "--labels", "site=Lyon, example.com/rack=R3", "--out", out}); err != nil {
		t.Fatal(err)
	}
	v, err := auth.LoadVerifier(filepath.Join(dir, auth.AccountJWTFile))
	if err != nil {
		t.Fatal(err)
	}
	token, err := auth.CredentialJWT(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Labels("pi-1", token, time.Now())
	if err != nil || len(got) != 2 || got["site"] != "Lyon" || got["example.com/rack"] != "R3" {
		t.Errorf("labels %v, %v", got, err)
	}
	if err := run("device", []string{"--dir", dir, "--id", "pi-2", "--labels", "site=not a value", "--out", out}); err == nil {
		t.Error("an invalid label value was issued")
	}
	if err := run("device", []string{"--dir", dir, "--id", "pi-3", "--out", out}); err != nil {
		t.Fatal(err)
	}
	token, _ = auth.CredentialJWT(out)
	if got, err := v.Labels("pi-3", token, time.Now()); err != nil || len(got) != 0 {
		t.Errorf("control, no --labels: %v, %v", got, err)
	}
}
