package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/testutil/pki"
)

// TestNATSCAFile: against a TLS server whose certificate a private CA signs, fleetctl connects with
// --nats-ca-file naming that CA, and refuses the server without it.
func TestNATSCAFile(t *testing.T) {
	ca := pki.TestCA(t, "fleet test")
	caFile := ca.CAFile(t)
	certFile, keyFile := ca.ServerFiles(t, "nats")
	a := fleettest.StartAuthorized(t, &fleettest.ServerTLS{CertFile: certFile, KeyFile: keyFile})
	url := "tls://" + a.Addr().String()
	nc, err := fleettest.ConnectAs(url, auth.Client{CredentialsFile: a.OperatorCreds, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(testCtx, js, 0); err != nil {
		t.Fatal(err)
	}
	viewer, err := a.Creds(auth.RoleViewer, "bob")
	if err != nil {
		t.Fatal(err)
	}
	states := func(extra ...string) (string, string, int) {
		var out, errb bytes.Buffer
		args := append([]string{"states", "--namespace", "shop", "--deployment", "web", "-o", "json", "--nats-url", url, "--creds", viewer, "--timeout", "5s"}, extra...)
		code := run(testCtx, args, &out, &errb)
		return out.String(), errb.String(), code
	}
	if out, stderr, code := states("--nats-ca-file", caFile); code != 0 || out != "[]\n" {
		t.Errorf("with the CA: code %d, %q, stderr %q", code, out, stderr)
	}
	if _, stderr, code := states(); code != exitError || !strings.Contains(stderr, "certificate") {
		t.Errorf("without the CA: code %d, stderr %q", code, stderr)
	}
}
