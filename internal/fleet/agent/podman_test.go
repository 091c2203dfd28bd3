package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/fleet"
)

var web = fleet.DeploymentKey{Namespace: "shop", Name: "web"}

func TestRunArgs(t *testing.T) {
	svc := iotv1.Service{Name: "nginx", Image: "docker.io/library/nginx:1.27",
		Ports:         []iotv1.Port{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 53, Protocol: "UDP"}},
		Env:           []iotv1.EnvVar{{Name: "MODE", Value: "edge"}},
		RestartPolicy: iotv1.RestartOnFailure}
	got := strings.Join(RunArgs(web, svc, "abc"), " ")
	want := "run --detach --name iot-shop-web-nginx --label iot.nationtech.io/deployment=shop.web " +
		"--label iot.nationtech.io/spec-hash=abc --restart on-failure --pull missing " +
		"--publish 8080:80/tcp --publish 53:53/udp --env MODE=edge docker.io/library/nginx:1.27"
	if got != want {
		t.Errorf("RunArgs =\n%s\nwant\n%s", got, want)
	}
}

func TestServiceHashChangesWithTheSpec(t *testing.T) {
	a := iotv1.Service{Name: "s", Image: "img:1"}
	b := a
	b.Image = "img:2"
	if ServiceHash(a) == ServiceHash(b) {
		t.Error("an image change keeps the hash")
	}
	if c := a; ServiceHash(a) != ServiceHash(c) {
		t.Error("the hash is not stable")
	}
}

// fakePodman answers the few podman commands Apply sends, from a map of containers to their hash.
type fakePodman struct {
	containers map[string]string
	images     map[string]bool
	calls      []string
}

func (f *fakePodman) run(_ context.Context, args ...string) (string, error) {
	f.calls = append(f.calls, strings.Join(args[:min(2, len(args))], " "))
	switch args[0] {
	case "container":
		h, ok := f.containers[args[len(args)-1]]
		if !ok {
			return "", errors.New("no such container")
		}
		return h + "|true", nil
	case "image":
		if !f.images[args[2]] {
			return "", errors.New("no such image")
		}
		return "", nil
	case "pull":
		f.images[args[1]] = true
		return "", nil
	case "rm":
		delete(f.containers, args[len(args)-1])
		return "", nil
	case "run":
		name := args[slices.Index(args, "--name")+1]
		for i, a := range args {
			if a == "--label" && strings.HasPrefix(args[i+1], LabelHash+"=") {
				f.containers[name] = strings.TrimPrefix(args[i+1], LabelHash+"=")
			}
		}
		return "", nil
	case "logs":
		return "first\nsecond\n", nil
	case "ps":
		var names []string
		for n := range f.containers {
			names = append(names, n)
		}
		return strings.Join(names, "\n"), nil
	}
	return "", errors.New("unexpected podman call " + args[0])
}

func TestPodmanApplyIsIdempotentAndReplacesChangedServices(t *testing.T) {
	f := &fakePodman{containers: map[string]string{}, images: map[string]bool{"img:1": true}}
	p := &Podman{Run: f.run}
	score := iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{{Name: "a", Image: "img:1"}}}}
	ctx := context.Background()
	if err := p.Apply(ctx, web, score); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(f.calls, "pull img:1") {
		t.Error("pulled an image podman already had")
	}
	f.calls = nil
	if err := p.Apply(ctx, web, score); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "run") || strings.HasPrefix(c, "rm") }) {
		t.Errorf("an unchanged score ran or removed containers: %v", f.calls)
	}
	score.PodmanV0.Services[0].Image = "img:2"
	if err := p.Apply(ctx, web, score); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.calls, "pull img:2") || f.containers["iot-shop-web-a"] != ServiceHash(score.PodmanV0.Services[0]) {
		t.Errorf("the changed service was not replaced: %v %v", f.calls, f.containers)
	}
	var lines []string
	if err := p.Logs(ctx, web, 2, func(l string) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(lines, ",") != "iot-shop-web-a | first,iot-shop-web-a | second" {
		t.Errorf("Logs = %q", lines)
	}
	if !slices.Contains(f.calls, "logs --tail") {
		t.Errorf("Logs did not ask podman for the tail: %v", f.calls)
	}
	if err := p.Remove(ctx, web); err != nil || len(f.containers) != 0 {
		t.Errorf("Remove left %v (%v)", f.containers, err)
	}
}
