package main

import (
	"flag"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
)

func TestValidUlimit(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"nofile=1024:1024", true},
		{"nproc=1024", true},
		{"memlock=-1:-1", true},
		{"core=unlimited", true},
		{"nofile", false},
		{"=1024", false},
		{"nofile=", false},
		{"nofile=1024:", false},
		{"nofile=ten", false},
		{"no file=1", false},
	}
	for _, tt := range tests {
		if err := validUlimit(tt.in); (err == nil) != tt.ok {
			t.Errorf("validUlimit(%q) = %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}

func TestRuntimeFlags(t *testing.T) {
	fs := flag.NewFlagSet("fleet-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := bindRuntimeFlags(fs)
	if o.ReconcileInterval != agent.DefaultReconcileInterval {
		t.Errorf("default --reconcile-interval = %v", o.ReconcileInterval)
	}
	err := fs.Parse([]string{"--podman-runtime=runc", "--podman-ulimit", "nofile=1024:1024", "--podman-ulimit=nproc=1024:1024", "--reconcile-interval=5s"})
	if err != nil {
		t.Fatal(err)
	}
	if o.OCIRuntime != "runc" || !slices.Equal(o.Ulimits, []string{"nofile=1024:1024", "nproc=1024:1024"}) || o.ReconcileInterval != 5*time.Second {
		t.Errorf("parsed %+v", o)
	}
	if err := bindRuntimeFlagsParse("--podman-ulimit=nofile"); err == nil {
		t.Error("a ulimit without a value was accepted")
	}
}

func bindRuntimeFlagsParse(args ...string) error {
	fs := flag.NewFlagSet("fleet-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindRuntimeFlags(fs)
	return fs.Parse(args)
}
