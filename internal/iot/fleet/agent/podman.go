package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
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
	// OCIRuntime is podman's --runtime for every command (e.g. "runc"); podman's default when empty.
	OCIRuntime string
	// Ulimits are given to every container podman runs (--ulimit, e.g. "nofile=1024:1024").
	Ulimits []string
}

// global are the options every podman command gets, before its subcommand.
func (p *Podman) global() []string {
	if p.OCIRuntime == "" {
		return nil
	}
	return []string{"--runtime", p.OCIRuntime}
}

func (p *Podman) run(ctx context.Context, args ...string) (string, error) {
	args = append(p.global(), args...)
	if p.Run != nil {
		return p.Run(ctx, args...)
	}
	cmd := exec.CommandContext(ctx, "podman", args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		sub := args[len(p.global()):]
		return out.String(), fmt.Errorf("podman %s: %w: %s", strings.Join(sub[:min(len(sub), 2)], " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// ContainerName is the podman container of one service of a deployment: fleet.ContainerName, whose hash
// keeps deployments whose names read alike apart.
func ContainerName(d fleet.DeploymentKey, service string) string {
	return fleet.ContainerName(d, service)
}

func deploymentLabel(d fleet.DeploymentKey) string { return d.Namespace + "." + d.Name }

// Apply runs every service of the score and removes the deployment's containers of services it no
// longer has.
func (p *Podman) Apply(ctx context.Context, d fleet.DeploymentKey, score iotv1.Score) error {
	if score.Type != iotv1.ScorePodmanV0 || score.PodmanV0 == nil {
		return fmt.Errorf("score type %q is not one this agent runs", score.Type)
	}
	// Containers of the deployment that the score does not name (a service it dropped, or one named
	// as an older release named them) go first, so that they free their host ports for the new ones.
	want := map[string]bool{}
	for _, svc := range score.PodmanV0.Services {
		want[ContainerName(d, svc.Name)] = true
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
	for _, svc := range score.PodmanV0.Services {
		name := ContainerName(d, svc.Name)
		hash := ServiceHash(svc)
		have, err := p.run(ctx, "container", "inspect", "--format", `{{index .Config.Labels "`+LabelHash+`"}}|{{.State.Running}}`, name)
		if err == nil {
			h, running, _ := strings.Cut(strings.TrimSpace(have), "|")
			if h == hash {
				if running == "true" || !p.restartable(ctx, svc, name) {
					continue
				}
				_, err := p.run(ctx, "start", name)
				if err == nil {
					continue
				}
				if _, gone := p.run(ctx, "container", "exists", name); gone == nil {
					return err
				}
				// Removed while it was being started (podman rm behind the agent's back): run it again.
			} else if _, err := p.run(ctx, "rm", "--force", name); err != nil {
				return err
			}
		}
		if _, err := p.run(ctx, "image", "exists", svc.Image); err != nil {
			if _, err := p.run(ctx, "pull", svc.Image); err != nil {
				return err
			}
		}
		if _, err := p.run(ctx, p.runArgs(d, svc, hash)...); err != nil {
			return err
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

// restartable says whether the agent may start a service's stopped container again: as podman's own
// restart policy would, never for Never and for OnFailure only after a non-zero exit.
func (p *Podman) restartable(ctx context.Context, svc iotv1.Service, name string) bool {
	switch svc.RestartPolicy {
	case iotv1.RestartNever:
		return false
	case iotv1.RestartOnFailure:
		out, err := p.run(ctx, "container", "inspect", "--format", "{{.State.ExitCode}}", name)
		return err != nil || strings.TrimSpace(out) != "0"
	}
	return true
}

// runArgs are RunArgs with this runtime's ulimits.
func (p *Podman) runArgs(d fleet.DeploymentKey, svc iotv1.Service, hash string) []string {
	args := RunArgs(d, svc, hash)
	extra := make([]string, 0, 2*len(p.Ulimits))
	for _, u := range p.Ulimits {
		extra = append(extra, "--ulimit", u)
	}
	// The image stays last.
	return slices.Insert(args, len(args)-1, extra...)
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

// Observe reads, for each service of the score, its container's state (podman container inspect): what
// the agent's drift repair compares with the desired state.
func (p *Podman) Observe(ctx context.Context, d fleet.DeploymentKey, score iotv1.Score) ([]ContainerStatus, error) {
	if score.PodmanV0 == nil {
		return nil, fmt.Errorf("score type %q is not one this agent runs", score.Type)
	}
	out := make([]ContainerStatus, 0, len(score.PodmanV0.Services))
	for _, svc := range score.PodmanV0.Services {
		cs := ContainerStatus{Service: svc.Name, Container: ContainerName(d, svc.Name), RestartPolicy: svc.RestartPolicy}
		have, err := p.run(ctx, "container", "inspect", "--format",
			`{{index .Config.Labels "`+LabelHash+`"}}|{{.State.Running}}|{{.State.ExitCode}}|{{.RestartCount}}`, cs.Container)
		if err != nil {
			// Tell "no such container" from podman failing: ps lists the deployment's containers.
			names, lerr := p.containers(ctx, d)
			if lerr != nil {
				return nil, lerr
			}
			if slices.Contains(names, cs.Container) {
				return nil, err
			}
			out = append(out, cs)
			continue
		}
		f := strings.Split(strings.TrimSpace(have), "|")
		if len(f) != 4 {
			return nil, fmt.Errorf("podman container inspect %s: unexpected output %q", cs.Container, have)
		}
		cs.Present, cs.Current, cs.Running = true, f[0] == ServiceHash(svc), f[1] == "true"
		cs.ExitCode, _ = strconv.Atoi(f[2])
		cs.Restarts, _ = strconv.Atoi(f[3])
		out = append(out, cs)
	}
	return out, nil
}

// Watch runs `podman events` and calls changed whenever one of the agent's containers (named iot-…)
// dies or is removed, until the stream ends; the agent runs it again when it does.
func (p *Podman) Watch(ctx context.Context, changed func()) error {
	args := append(p.global(), "events", "--format", "json", "--filter", "type=container",
		"--filter", "event=died", "--filter", "event=remove")
	cmd := exec.CommandContext(ctx, "podman", args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("podman events: %w", err)
	}
	readEvents(stdout, changed)
	if err := cmd.Wait(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("podman events: %w: %s", err, strings.TrimSpace(errOut.String()))
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("podman events ended")
}

// readEvents calls changed for each podman event (JSON lines) about a container the agent runs.
func readEvents(r io.Reader, changed func()) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		var e struct {
			Name       string            `json:"Name"`
			Attributes map[string]string `json:"Attributes"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if _, ours := e.Attributes[LabelDeployment]; ours || strings.HasPrefix(e.Name, "iot-") {
			changed()
		}
	}
}
