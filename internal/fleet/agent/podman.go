package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/fleet"
)

// Labels the agent puts on the containers it runs, to find them again and to see whether one is current.
const (
	LabelDeployment = "iot.nationtech.io/deployment"
	LabelHash       = "iot.nationtech.io/spec-hash"
)

// Podman is the Runtime that drives the podman CLI. Each service runs as one container named
// ContainerName(d, service); a container whose spec hash label differs from the service's is replaced.
// Images are pulled only when podman does not have them (IfNotPresent).
type Podman struct {
	// Run runs podman with args and returns its standard output; exec of "podman" when nil.
	Run func(ctx context.Context, args ...string) (string, error)
}

func (p *Podman) run(ctx context.Context, args ...string) (string, error) {
	if p.Run != nil {
		return p.Run(ctx, args...)
	}
	cmd := exec.CommandContext(ctx, "podman", args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("podman %s: %w: %s", strings.Join(args[:min(len(args), 2)], " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// ContainerName is the podman container of one service of a deployment.
func ContainerName(d fleet.DeploymentKey, service string) string {
	return "iot-" + d.Namespace + "-" + d.Name + "-" + service
}

func deploymentLabel(d fleet.DeploymentKey) string { return d.Namespace + "." + d.Name }

// Apply runs every service of the score and removes the deployment's containers of services it no
// longer has.
func (p *Podman) Apply(ctx context.Context, d fleet.DeploymentKey, score iotv1.Score) error {
	if score.Type != iotv1.ScorePodmanV0 || score.PodmanV0 == nil {
		return fmt.Errorf("score type %q is not one this agent runs", score.Type)
	}
	want := map[string]bool{}
	for _, svc := range score.PodmanV0.Services {
		name := ContainerName(d, svc.Name)
		want[name] = true
		hash := ServiceHash(svc)
		have, err := p.run(ctx, "container", "inspect", "--format", `{{index .Config.Labels "`+LabelHash+`"}}|{{.State.Running}}`, name)
		if err == nil {
			h, running, _ := strings.Cut(strings.TrimSpace(have), "|")
			if h == hash {
				if running != "true" {
					if _, err := p.run(ctx, "start", name); err != nil {
						return err
					}
				}
				continue
			}
			if _, err := p.run(ctx, "rm", "--force", name); err != nil {
				return err
			}
		}
		if _, err := p.run(ctx, "image", "exists", svc.Image); err != nil {
			if _, err := p.run(ctx, "pull", svc.Image); err != nil {
				return err
			}
		}
		if _, err := p.run(ctx, RunArgs(d, svc, hash)...); err != nil {
			return err
		}
	}
	names, err := p.containers(ctx, d)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !want[n] {
			if _, err := p.run(ctx, "rm", "--force", n); err != nil {
				return err
			}
		}
	}
	return nil
}

// Remove removes every container of the deployment.
func (p *Podman) Remove(ctx context.Context, d fleet.DeploymentKey) error {
	names, err := p.containers(ctx, d)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := p.run(ctx, "rm", "--force", "--ignore", n); err != nil {
			return err
		}
	}
	return nil
}

func (p *Podman) containers(ctx context.Context, d fleet.DeploymentKey) ([]string, error) {
	out, err := p.run(ctx, "ps", "--all", "--filter", "label="+LabelDeployment+"="+deploymentLabel(d), "--format", "{{.Names}}")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// RunArgs are podman's arguments to start one service's container.
func RunArgs(d fleet.DeploymentKey, svc iotv1.Service, hash string) []string {
	args := []string{"run", "--detach", "--name", ContainerName(d, svc.Name),
		"--label", LabelDeployment + "=" + deploymentLabel(d), "--label", LabelHash + "=" + hash,
		"--restart", restartFlag(svc.RestartPolicy), "--pull", "missing"}
	for _, port := range svc.Ports {
		host := port.HostPort
		if host == 0 {
			host = port.ContainerPort
		}
		proto := strings.ToLower(string(port.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		args = append(args, "--publish", fmt.Sprintf("%d:%d/%s", host, port.ContainerPort, proto))
	}
	for _, e := range svc.Env {
		args = append(args, "--env", e.Name+"="+e.Value)
	}
	return append(args, svc.Image)
}

func restartFlag(r iotv1.RestartPolicy) string {
	switch r {
	case iotv1.RestartOnFailure:
		return "on-failure"
	case iotv1.RestartNever:
		return "no"
	}
	return "always"
}

// ServiceHash identifies a service's spec: a container with another hash is replaced.
func ServiceHash(svc iotv1.Service) string {
	c := svc
	c.Env = slices.Clone(svc.Env)
	data, _ := json.Marshal(c) // plain strings and numbers always marshal
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// Logs streams the newest tail lines of each of the deployment's containers (podman logs --tail),
// container by container, each line prefixed with its container's name.
func (p *Podman) Logs(ctx context.Context, d fleet.DeploymentKey, tail int, line func(string) error) error {
	names, err := p.containers(ctx, d)
	if err != nil {
		return err
	}
	for _, n := range names {
		out, err := p.run(ctx, "logs", "--tail", fmt.Sprint(tail), n)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if err := line(n + " | " + l); err != nil {
				return err
			}
		}
	}
	return nil
}
