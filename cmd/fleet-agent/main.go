// Command fleet-agent runs on an IoT device: it registers the device (labels and inventory) in the
// fleet's NATS JetStream buckets, sends heartbeats, and runs with podman the containers the operator's
// iot Deployments give the device, reporting each state transition (docs/iot.md). "fleet-agent install"
// sets a device up for it: its user, subordinate IDs, linger, configuration file and systemd unit.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "install" {
		os.Exit(runInstall(os.Args[2:], os.Stdout, os.Stderr))
	}
	hostname, _ := os.Hostname()
	af := bindAgentFlags(flag.CommandLine, hostname)
	configPath := flag.String(configFlag, "", "A configuration file of the flags above, one NAME=VALUE a line (fleet-agent install writes it); flags on the command line win.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	log := zap.New(zap.UseFlagOptions(&opts)).WithName("fleet-agent")
	if *configPath != "" {
		if err := loadConfig(flag.CommandLine, *configPath); err != nil {
			log.Error(err, "--config")
			os.Exit(2)
		}
		log = zap.New(zap.UseFlagOptions(&opts)).WithName("fleet-agent") // the file may set the log flags
	}
	url, creds, caFile, certFile, keyFile, id, labelFlag, rt := af.url, af.creds, af.caFile, af.certFile, af.keyFile, af.id, af.labels, af.rt

	labels, err := parseLabels(*labelFlag)
	if err != nil {
		log.Error(err, "--labels")
		os.Exit(2)
	}
	if err := fleet.ValidDeviceID(*id); err != nil {
		log.Error(err, "--device-id")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := auth.Client{CredentialsFile: *creds, CAFile: *caFile, CertFile: *certFile, KeyFile: *keyFile,
		User: os.Getenv("NATS_USER"), Password: os.Getenv("NATS_PASSWORD")}
	device := fleet.DeviceInfo{ID: *id, Labels: labels, Inventory: inventory(hostname)}
	if *creds != "" {
		// The user JWT (public) carries the credential labels; the operator verifies it.
		if device.Credential, err = auth.CredentialJWT(*creds); err != nil {
			log.Error(err, "--nats-credentials-file")
			os.Exit(2)
		}
	}
	if err := run(ctx, log, *url, client, device, *rt); err != nil {
		log.Error(err, "agent stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, log logr.Logger, url string, client auth.Client, device fleet.DeviceInfo, rt runtimeOptions) error {
	if client.CredentialsFile != "" {
		// A device's credentials name it: any other ID would be refused on every write.
		if b, err := os.ReadFile(client.CredentialsFile); err == nil {
			if _, name, role, err := auth.UserOf(b); err == nil && role == auth.RoleDevice && name != device.ID {
				return fmt.Errorf("--nats-credentials-file is device %q's, not --device-id %q's", name, device.ID)
			}
		}
	}
	nc, js, err := client.Dial(url, nats.Name("fleet-agent "+device.ID), nats.MaxReconnects(-1), nats.ReconnectWait(2*time.Second),
		nats.RetryOnFailedConnect(true))
	if err != nil {
		return err
	}
	defer nc.Close()
	// The operator creates the buckets; wait for them (and for the server) as long as it takes: tried at
	// once, then every 5 seconds.
	var st *store.Store
	if err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 5 * time.Second, Steps: math.MaxInt}, func(ctx context.Context) (bool, error) {
		var err error
		if st, err = store.Bind(ctx, js); err != nil {
			log.Info("waiting for the fleet's buckets", "reason", err.Error())
			return false, nil
		}
		return true, nil
	}); err != nil {
		return nil // ctx ended
	}
	a := &agent.Agent{Device: device, Store: st, Log: log, ReconcileInterval: rt.ReconcileInterval,
		Runtime: &agent.Podman{OCIRuntime: rt.OCIRuntime, Ulimits: rt.Ulimits}}
	log.Info("running", "device", device.ID, "labels", device.Labels)
	return a.Run(ctx)
}

// parseLabels reads "k=v,k2=v2".
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// inventory is what the device is: read from the Go runtime and /proc, each item best effort.
func inventory(hostname string) fleet.Inventory {
	inv := fleet.Inventory{Hostname: hostname, Arch: runtime.GOARCH, OS: runtime.GOOS, CPUs: runtime.NumCPU(), AgentVersion: agent.Version}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		inv.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseUint(f[1], 10, 64); err == nil {
					inv.MemoryBytes = kb * 1024
				}
			}
		}
	}
	return inv
}
