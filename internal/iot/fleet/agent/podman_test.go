package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

var web = fleet.DeploymentKey{Namespace: "shop", Name: "web"}

func TestRunArgs(t *testing.T) {
	svc := iotv1.Service{Name: "nginx", Image: "docker.io/library/nginx:1.27",
		Ports:         []iotv1.Port{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 53, Protocol: "UDP"}},
		Env:           []iotv1.EnvVar{{Name: "MODE", Value: "edge"}},
		RestartPolicy: iotv1.RestartOnFailure}
	got := strings.Join(RunArgs(web, svc, "abc"), " ")
	want := "run --detach --name iot-shop-web-nginx-97375646 --label iot.nationtech.io/deployment=shop.web " +
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

// fakePodman answers the few podman commands the runtime sends, from a map of containers.
type fakePodman struct {
	containers map[string]*fakeContainer
	images     map[string]bool
	calls      []string
	// runtime is the --runtime every command was given ("" when none, "mixed" when they differed).
	runtime string
	seen    bool
	// runs are the arguments of each podman run.
	runs [][]string
}

type fakeContainer struct {
	hash     string
	running  bool
	exit     int
	restarts int
}

func (f *fakePodman) run(_ context.Context, args ...string) (string, error) {
	rt := ""
	if len(args) > 1 && args[0] == "--runtime" {
		rt, args = args[1], args[2:]
	}
	if f.seen && rt != f.runtime {
		f.runtime = "mixed"
	}
	f.runtime, f.seen = rt, true
	f.calls = append(f.calls, strings.Join(args[:min(2, len(args))], " "))
	switch args[0] {
	case "container":
		c, ok := f.containers[args[len(args)-1]]
		if !ok {
			return "", errors.New("no such container")
		}
		format := args[len(args)-2]
		switch {
		case strings.Contains(format, "RestartCount"):
			return fmt.Sprintf("%s|%v|%d|%d\n", c.hash, c.running, c.exit, c.restarts), nil
		case strings.Contains(format, "ExitCode"):
			return fmt.Sprintf("%d\n", c.exit), nil
		}
		return fmt.Sprintf("%s|%v\n", c.hash, c.running), nil
	case "start":
		f.containers[args[1]].running = true
		return "", nil
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
		f.runs = append(f.runs, args)
		name := args[slices.Index(args, "--name")+1]
		for i, a := range args {
			if a == "--label" && strings.HasPrefix(args[i+1], LabelHash+"=") {
				f.containers[name] = &fakeContainer{hash: strings.TrimPrefix(args[i+1], LabelHash+"="), running: true}
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

func newFakePodman(images ...string) *fakePodman {
	f := &fakePodman{containers: map[string]*fakeContainer{}, images: map[string]bool{}}
	for _, i := range images {
		f.images[i] = true
	}
	return f
}

func score(svcs ...iotv1.Service) iotv1.Score {
	return iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: svcs}}
}

func TestPodmanApplyIsIdempotentAndReplacesChangedServices(t *testing.T) {
	f := newFakePodman("img:1")
	p := &Podman{Run: f.run}
	score := score(iotv1.Service{Name: "a", Image: "img:1"})
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
	if !slices.Contains(f.calls, "pull img:2") || f.containers[ContainerName(web, "a")].hash != ServiceHash(score.PodmanV0.Services[0]) {
		t.Errorf("the changed service was not replaced: %v %v", f.calls, f.containers)
	}
	var lines []string
	if err := p.Logs(ctx, web, 2, func(l string) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if a := ContainerName(web, "a"); strings.Join(lines, ",") != a+" | first,"+a+" | second" {
		t.Errorf("Logs = %q", lines)
	}
	if !slices.Contains(f.calls, "logs --tail") {
		t.Errorf("Logs did not ask podman for the tail: %v", f.calls)
	}
	if err := p.Remove(ctx, web); err != nil || len(f.containers) != 0 {
		t.Errorf("Remove left %v (%v)", f.containers, err)
	}
}

// TestPodmanRuntimeOptions: --runtime goes to every podman command, the ulimits to every podman run
// (before the image, which stays last).
func TestPodmanRuntimeOptions(t *testing.T) {
	f := newFakePodman("img:1")
	p := &Podman{Run: f.run, OCIRuntime: "runc", Ulimits: []string{"nofile=1024:1024", "nproc=1024:1024"}}
	ctx := context.Background()
	if err := p.Apply(ctx, web, score(iotv1.Service{Name: "a", Image: "img:1"})); err != nil {
		t.Fatal(err)
	}
	if f.runtime != "runc" {
		t.Errorf("--runtime given as %q", f.runtime)
	}
	got := strings.Join(f.runs[0], " ")
	if !strings.HasSuffix(got, "--ulimit nofile=1024:1024 --ulimit nproc=1024:1024 img:1") {
		t.Errorf("podman run %s", got)
	}
	// The positive control: no options, none given.
	f = newFakePodman("img:1")
	p = &Podman{Run: f.run}
	if err := p.Apply(ctx, web, score(iotv1.Service{Name: "a", Image: "img:1"})); err != nil {
		t.Fatal(err)
	}
	if f.runtime != "" || slices.Contains(f.runs[0], "--ulimit") {
		t.Errorf("options without being asked: runtime %q, run %v", f.runtime, f.runs[0])
	}
}

// TestPodmanObserveAndRepair: Observe reads what runs; Apply repairs a stopped container by starting it
// (unless its restart policy keeps it stopped) and a removed one by running it again.
func TestPodmanObserveAndRepair(t *testing.T) {
	ctx := context.Background()
	svcs := []iotv1.Service{{Name: "a", Image: "img:1"}, {Name: "b", Image: "img:1", RestartPolicy: iotv1.RestartNever},
		{Name: "c", Image: "img:1", RestartPolicy: iotv1.RestartOnFailure}}
	sc := score(svcs...)
	f := newFakePodman("img:1")
	p := &Podman{Run: f.run}
	if err := p.Apply(ctx, web, sc); err != nil {
		t.Fatal(err)
	}
	obs, err := p.Observe(ctx, web, sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range obs {
		if !c.Present || !c.Current || !c.Running {
			t.Errorf("after Apply %+v", c)
		}
	}
	delete(f.containers, ContainerName(web, "a"))
	*f.containers[ContainerName(web, "b")] = fakeContainer{hash: ServiceHash(svcs[1]), exit: 1}
	*f.containers[ContainerName(web, "c")] = fakeContainer{hash: ServiceHash(svcs[2]), exit: 0, restarts: 2}
	obs, err = p.Observe(ctx, web, sc)
	if err != nil {
		t.Fatal(err)
	}
	want := []ContainerStatus{
		{Service: "a", Container: ContainerName(web, "a")},
		{Service: "b", Container: ContainerName(web, "b"), Present: true, Current: true, ExitCode: 1, RestartPolicy: iotv1.RestartNever},
		{Service: "c", Container: ContainerName(web, "c"), Present: true, Current: true, Restarts: 2, RestartPolicy: iotv1.RestartOnFailure},
	}
	if fmt.Sprint(obs) != fmt.Sprint(want) {
		t.Errorf("Observe =\n%+v\nwant\n%+v", obs, want)
	}
	if err := p.Apply(ctx, web, sc); err != nil {
		t.Fatal(err)
	}
	if c := f.containers[ContainerName(web, "a")]; c == nil || !c.running {
		t.Error("the removed container was not run again")
	}
	if f.containers[ContainerName(web, "b")].running || f.containers[ContainerName(web, "c")].running {
		t.Error("a container whose restart policy keeps it stopped was started")
	}
	// The positive control: OnFailure after a failure is started again.
	f.containers[ContainerName(web, "c")].exit = 3
	if err := p.Apply(ctx, web, sc); err != nil {
		t.Fatal(err)
	}
	if !f.containers[ContainerName(web, "c")].running {
		t.Error("an OnFailure container that failed was not started")
	}
}

func TestReadEvents(t *testing.T) {
	in := `{"ContainerExitCode":2,"Name":"iot-shop-web-a","Status":"died","Type":"container","Attributes":{"iot.nationtech.io/deployment":"shop.web"}}
{"Name":"someone-else","Status":"died","Type":"container","Attributes":{}}
not json
{"Name":"iot-shop-web-a","Status":"remove","Type":"container","Attributes":{}}
`
	n := 0
	readEvents(strings.NewReader(in), func() { n++ })
	if n != 2 {
		t.Errorf("%d changes for the agent's 2 events", n)
	}
}

// TestPodmanApplyRemovesUnnamedContainersFirst: a container of the deployment that the score does not
// name (a dropped service, or the name an older release gave it) is removed before any container runs,
// so that it frees its host ports for the new one.
func TestPodmanApplyRemovesUnnamedContainersFirst(t *testing.T) {
	f := newFakePodman("img:1")
	f.containers["iot-shop-web-a"] = &fakeContainer{hash: "old", running: true} // an older release's name
	p := &Podman{Run: f.run}
	if err := p.Apply(context.Background(), web, score(iotv1.Service{Name: "a", Image: "img:1"})); err != nil {
		t.Fatal(err)
	}
	rm, run := slices.Index(f.calls, "rm --force"), slices.Index(f.calls, "run --detach")
	if rm < 0 || run < 0 || rm > run {
		t.Errorf("calls %v: want the old container removed before the new one runs", f.calls)
	}
	if _, ok := f.containers["iot-shop-web-a"]; ok || f.containers[ContainerName(web, "a")] == nil {
		t.Errorf("containers after Apply: %v", f.containers)
	}
}
