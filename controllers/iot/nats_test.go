package iot

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nats://nats.iot:4222", "nats://nats.iot:4222"},
		{"nats://fleet:s3cret@nats.iot:4222", "nats://nats.iot:4222"},
		{"tls://t0ken@nats.iot:4222", "tls://nats.iot:4222"},
		{"nats://a:s3cret@n1:4222, nats://b:s3cret@n2:4222", "nats://n1:4222,nats://n2:4222"},
		{"fleet:s3cret@nats.iot:4222", "nats://nats.iot:4222"},
		{"nats://fleet:s3cret@nats.iot:4222/path?x=s3cret#s3cret", "nats://nats.iot:4222"},
		{"nats://%zz:s3cret@host", "<unparsable NATS URL>"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestNATSPasswordNeverShown: with a NATS URL carrying a user and password and a server that is not
// there, the Deployment's status, its events and the operator's log name the server without the
// credentials. The control: they do name the server (127.0.0.1 and its port), so the test would see
// the URL if it were copied.
func TestNATSPasswordNeverShown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	const secret = "s3cretPassw0rd"
	opts := &NATSOptions{URL: "nats://fleet:" + secret + "@" + addr}

	var (
		mu   sync.Mutex
		logs strings.Builder
	)
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(&logs, prefix, args)
	}, funcr.Options{})
	ctx, cancel := context.WithTimeout(ctrl.LoggerInto(context.Background(), log), 3*time.Second)
	defer cancel()
	rec := record.NewFakeRecorder(100)
	r := &DeploymentReconciler{NATS: opts, Recorder: rec}
	if err := (&natsConnector{r: r}).Start(ctx); err != nil {
		t.Fatal(err)
	}

	d := fleettest.Deployment("ns", "web", "x", "img:1")
	d.Generation = 1
	s := r.newDeploymentScope(d, nil)
	if _, err := r.reconcileDesiredState(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	s.status = d.Status.DeepCopy()
	s.Conditions = &s.status.Conditions
	status, _ := json.Marshal(s.summarize(time.Now()))
	close(rec.Events)
	var events strings.Builder
	for e := range rec.Events {
		fmt.Fprintln(&events, e)
	}
	mu.Lock()
	defer mu.Unlock()
	for what, text := range map[string]string{"status": string(status), "log": logs.String()} {
		if strings.Contains(text, secret) || strings.Contains(text, "fleet:") {
			t.Errorf("the %s shows the NATS credentials: %s", what, text)
		}
		if !strings.Contains(text, addr) {
			t.Errorf("control: the %s does not name the server %s: %s", what, addr, text)
		}
	}
	if strings.Contains(events.String(), secret) {
		t.Errorf("an event shows the NATS credentials: %s", events.String())
	}
}
