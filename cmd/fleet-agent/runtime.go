package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
)

// runtimeOptions are how the agent drives podman and repairs drift (docs/iot.md, "The agent").
type runtimeOptions struct {
	OCIRuntime        string
	Ulimits           []string
	ReconcileInterval time.Duration
}

// bindRuntimeFlags adds the podman and drift-repair flags to fs.
func bindRuntimeFlags(fs *flag.FlagSet) *runtimeOptions {
	o := &runtimeOptions{}
	fs.StringVar(&o.OCIRuntime, "podman-runtime", "", "OCI runtime podman runs the containers with (podman --runtime, e.g. runc); podman's default when empty.")
	fs.Func("podman-ulimit", "A ulimit every container gets (podman run --ulimit), name=soft[:hard], e.g. nofile=1024:1024; repeat the flag for several. runc needs nofile and nproc set explicitly.", func(v string) error {
		if err := validUlimit(v); err != nil {
			return err
		}
		o.Ulimits = append(o.Ulimits, v)
		return nil
	})
	fs.DurationVar(&o.ReconcileInterval, "reconcile-interval", agent.DefaultReconcileInterval, "How often the agent compares the containers that run with the desired state and repairs the difference; podman events trigger a comparison in between.")
	return o
}

// validUlimit checks podman's --ulimit syntax, so that a typo fails at start rather than on every
// container run.
func validUlimit(v string) error {
	name, limits, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("ulimit %q is not name=soft[:hard]", v)
	}
	soft, hard, withHard := strings.Cut(limits, ":")
	nums := []string{soft}
	if withHard {
		nums = append(nums, hard)
	}
	for _, n := range nums {
		if n == "-1" || n == "unlimited" {
			continue
		}
		if _, err := strconv.ParseUint(n, 10, 64); err != nil {
			return fmt.Errorf("ulimit %q: %q is not a number", v, n)
		}
	}
	return nil
}
