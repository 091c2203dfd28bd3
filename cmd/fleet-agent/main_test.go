package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

func TestParseLabels(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
		err  bool
	}{
		{"", map[string]string{}, false},
		{"site=lyon, tier=edge", map[string]string{"site": "lyon", "tier": "edge"}, false},
		{"empty=", map[string]string{"empty": ""}, false},
		{"novalue", nil, true},
		{"=v", nil, true},
	}
	for _, tt := range tests {
		got, err := parseLabels(tt.in)
		if (err != nil) != tt.err || (!tt.err && len(got) != len(tt.want)) {
			t.Errorf("parseLabels(%q) = %v, %v", tt.in, got, err)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("parseLabels(%q)[%q] = %q, want %q", tt.in, k, got[k], v)
			}
		}
	}
}

// TestRunRegistersTheDevice runs the agent's main path against a real NATS server whose buckets the
// "operator" (here the test) created: the device shows up in the registry with its inventory.
func TestRunRegistersTheDevice(t *testing.T) {
	f := fleettest.StartConnected(t)
	ctx, cancel := context.WithCancel(f.Ctx)
	defer cancel()
	srv, st := f.Server, f.Store
	host, _ := os.Hostname()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, logr.Discard(), srv.ClientURL(), auth.Client{}, fleet.DeviceInfo{ID: "pi-1", Labels: map[string]string{"site": "a"}, Inventory: inventory(host)}, runtimeOptions{})
	}()
	deadline := time.Now().Add(20 * time.Second)
	var got *fleet.DeviceInfo
	for got == nil && time.Now().Before(deadline) {
		_ = st.EachDevice(ctx, func(d *fleet.DeviceInfo) {
			if d.ID == "pi-1" {
				got = d
			}
		})
		time.Sleep(20 * time.Millisecond)
	}
	if got == nil {
		t.Fatal("the device never registered")
	}
	if got.Labels["site"] != "a" || got.Inventory.AgentVersion == "" || got.Inventory.CPUs == 0 {
		t.Errorf("registered %+v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run = %v", err)
	}
}
