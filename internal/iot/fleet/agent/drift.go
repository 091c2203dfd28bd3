package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// DefaultReconcileInterval is how often the agent compares what runs with what is desired when no
// ReconcileInterval is set.
const DefaultReconcileInterval = 30 * time.Second

// CrashLoopThreshold is how many looks in a row must find a container exited (or restarted by podman)
// before the agent reports the deployment Failed with ReasonCrashLoop.
const CrashLoopThreshold = 3

// A repair is tried repairAttempts times, repairPause apart, before the agent reports RepairFailed.
const (
	repairAttempts = 3
	repairPause    = 250 * time.Millisecond
)

// The agent waits this long between repairs of a crash-looping deployment, doubling from the first to
// the second, as the kubelet's CrashLoopBackOff does.
const (
	crashLoopBackoffMin = 10 * time.Second
	crashLoopBackoffMax = 5 * time.Minute
)

// Reasons of the agent's events (the event ring) and of the messages of the states it reports.
const (
	// ReasonApplied: a desired state was applied and its containers run.
	ReasonApplied = "Applied"
	// ReasonApplyFailed: a desired state could not be applied.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonRemoved: a withdrawn deployment's containers were removed.
	ReasonRemoved = "Removed"
	// ReasonRemoveFailed: a withdrawn deployment's containers could not be removed.
	ReasonRemoveFailed = "RemoveFailed"
	// ReasonContainerMissing: a container of a desired deployment was removed behind the agent's back.
	ReasonContainerMissing = "ContainerMissing"
	// ReasonContainerReplaced: a container of the deployment's name runs another spec than the desired one.
	ReasonContainerReplaced = "ContainerReplaced"
	// ReasonContainerExited: a container stopped (podman stop, a crash that podman did not restart).
	ReasonContainerExited = "ContainerExited"
	// ReasonContainerRestarted: podman's restart policy restarted a container since the last look.
	ReasonContainerRestarted = "ContainerRestarted"
	// ReasonCompleted: a container exited and its restart policy (Never, or OnFailure after exit code 0)
	// keeps it stopped; the deployment is reported Failed since nothing runs.
	ReasonCompleted = "Completed"
	// ReasonCrashLoop: a container keeps exiting (CrashLoopThreshold looks in a row).
	ReasonCrashLoop = "CrashLoop"
	// ReasonRequestRefused: a log or events request whose reply subject is not the one the contract
	// names for its requester was not answered.
	ReasonRequestRefused = "RequestRefused"
	// ReasonRepaired: drift was repaired; the containers run again.
	ReasonRepaired = "Repaired"
	// ReasonRepairFailed: the runtime could not repair drift.
	ReasonRepairFailed = "RepairFailed"
	// ReasonObserveFailed: the runtime could not say what runs.
	ReasonObserveFailed = "ObserveFailed"
	// ReasonRuntimeEventsLost: the runtime's event stream (podman events) ended; the agent starts it
	// again, and the tick repairs drift meanwhile.
	ReasonRuntimeEventsLost = "RuntimeEventsLost"
)

// ContainerStatus is what a runtime observes of one service's container.
type ContainerStatus struct {
	Service   string
	Container string
	// Present: the container exists.
	Present bool
	// Current: it carries the service's spec hash.
	Current bool
	// Running: it runs.
	Running bool
	// ExitCode is its last exit code, when it is not running.
	ExitCode int
	// Restarts is how many times the runtime's restart policy restarted it.
	Restarts int
	// RestartPolicy is the service's.
	RestartPolicy iotv1.RestartPolicy
}

// stays says whether the restart policy keeps an exited container stopped.
func (c ContainerStatus) stays() bool {
	return c.RestartPolicy == iotv1.RestartNever || (c.RestartPolicy == iotv1.RestartOnFailure && c.ExitCode == 0)
}

// Observer is a Runtime that can say what runs: the agent repairs drift only with one.
type Observer interface {
	// Observe reports, for each service of score, its container's state.
	Observe(ctx context.Context, d fleet.DeploymentKey, score iotv1.Score) ([]ContainerStatus, error)
}

// Watcher is a Runtime that streams changes to its containers, so that drift is repaired as it happens
// rather than at the next tick.
type Watcher interface {
	// Watch calls changed on each change until the stream ends (an error) or ctx does (nil).
	Watch(ctx context.Context, changed func()) error
}

// drift is what the agent remembers of one desired deployment between looks: the phase it last
// reported, and how its containers have been exiting.
type drift struct {
	gen   int64
	score iotv1.Score
	// phase and msg are what the agent last reported (PhaseNone: nothing yet).
	phase fleet.Phase
	msg   string
	// restarts is each container's restart count at the last look.
	restarts map[string]int
	// exits counts the looks in a row that found a container exited or restarted.
	exits int
	// backoff and notBefore pace the repairs of a crash-looping deployment.
	backoff   time.Duration
	notBefore time.Time
}

// verdict is what one look decides: the phase to report (before any repair), whether to repair, and
// the event to record.
type verdict struct {
	report     bool
	phase      fleet.Phase
	msg        string
	repair     bool
	severity   Severity
	reason     string
	eventMsg   string
	eventWorth bool
}

func (v verdict) String() string {
	return fmt.Sprintf("report=%v %s %q repair=%v event=%s", v.report, v.phase, v.msg, v.repair, v.reason)
}

// look decides what one observation of the containers means. It never decides Running while a
// container does not run: a stopped or missing container turns a Running deployment Pending (being
// repaired) or Failed, written before the repair starts.
func (s *drift) look(obs []ContainerStatus, now time.Time) verdict {
	var missing, replaced, exited, restarted, completed []ContainerStatus
	for _, c := range obs {
		switch {
		case !c.Present:
			missing = append(missing, c)
		case !c.Current:
			replaced = append(replaced, c)
		case !c.Running && c.stays():
			completed = append(completed, c)
		case !c.Running:
			exited = append(exited, c)
		case c.Restarts > s.restarts[c.Container] && s.restarts != nil:
			restarted = append(restarted, c)
		}
	}
	s.restarts = map[string]int{}
	for _, c := range obs {
		s.restarts[c.Container] = c.Restarts
	}
	if len(missing)+len(replaced)+len(exited)+len(restarted)+len(completed) == 0 {
		s.exits, s.backoff, s.notBefore = 0, 0, time.Time{}
		if s.phase == fleet.PhaseRunning {
			return verdict{}
		}
		return verdict{report: true, phase: fleet.PhaseRunning, severity: SeverityInfo, reason: ReasonRepaired,
			eventMsg: "every container runs", eventWorth: true}
	}
	if len(exited)+len(restarted) > 0 {
		s.exits++
	}
	var (
		reason string
		what   []string
	)
	for _, g := range []struct {
		cs     []ContainerStatus
		reason string
		say    func(ContainerStatus) string
	}{
		{completed, ReasonCompleted, func(c ContainerStatus) string {
			return fmt.Sprintf("container %s exited with code %d and its restart policy %s keeps it stopped", c.Container, c.ExitCode, policyName(c.RestartPolicy))
		}},
		{missing, ReasonContainerMissing, func(c ContainerStatus) string { return "container " + c.Container + " was removed" }},
		{replaced, ReasonContainerReplaced, func(c ContainerStatus) string { return "container " + c.Container + " runs another spec" }},
		{exited, ReasonContainerExited, func(c ContainerStatus) string {
			return fmt.Sprintf("container %s stopped (exit code %d)", c.Container, c.ExitCode)
		}},
		{restarted, ReasonContainerRestarted, func(c ContainerStatus) string {
			return fmt.Sprintf("container %s was restarted by podman (%d restarts)", c.Container, c.Restarts)
		}},
	} {
		for _, c := range g.cs {
			if reason == "" {
				reason = g.reason
			}
			what = append(what, g.say(c))
		}
	}
	msg := reason + ": " + strings.Join(what, "; ")
	repairable := len(missing)+len(replaced)+len(exited) > 0
	if s.exits >= CrashLoopThreshold {
		// Keep the message stable while the loop lasts, so the record is not rewritten at each look.
		msg = fmt.Sprintf("%s: a container keeps exiting (%d looks in a row found one exited or restarted); last: %s",
			ReasonCrashLoop, CrashLoopThreshold, what[0])
		v := verdict{report: true, phase: fleet.PhaseFailed, msg: msg, severity: SeverityError, reason: ReasonCrashLoop,
			eventMsg: msg, eventWorth: true}
		if repairable && !now.Before(s.notBefore) {
			v.repair = true
			s.backoff = min(max(2*s.backoff, crashLoopBackoffMin), crashLoopBackoffMax)
			s.notBefore = now.Add(s.backoff)
		}
		return v
	}
	v := verdict{severity: SeverityWarning, reason: reason, eventMsg: msg, eventWorth: true, repair: repairable}
	switch {
	case len(completed) > 0:
		// Nothing brings the completed container back: the deployment does not run.
		v.report, v.phase, v.msg, v.severity = true, fleet.PhaseFailed, msg, SeverityError
	case repairable && (s.phase == fleet.PhaseRunning || s.phase == fleet.PhaseNone):
		v.report, v.phase, v.msg = true, fleet.PhasePending, "Repairing: "+msg
	}
	return v
}

// repaired decides what the observation right after a repair means: Running once every container runs
// again, unless the deployment is crash-looping (the next look that finds it steady says Running).
func (s *drift) repaired(obs []ContainerStatus, err error) verdict {
	if err != nil {
		msg := ReasonRepairFailed + ": " + truncate(err.Error(), 480)
		return verdict{report: true, phase: fleet.PhaseFailed, msg: msg, severity: SeverityError, reason: ReasonRepairFailed,
			eventMsg: msg, eventWorth: true}
	}
	for _, c := range obs {
		if !c.Present || !c.Current || !c.Running {
			return verdict{}
		}
	}
	s.restarts = map[string]int{}
	for _, c := range obs {
		s.restarts[c.Container] = c.Restarts
	}
	if s.exits >= CrashLoopThreshold || s.phase == fleet.PhaseRunning {
		return verdict{}
	}
	return verdict{report: true, phase: fleet.PhaseRunning, severity: SeverityInfo, reason: ReasonRepaired,
		eventMsg: "every container runs again", eventWorth: true}
}

func policyName(p iotv1.RestartPolicy) string {
	if p == "" {
		return string(iotv1.RestartAlways)
	}
	return string(p)
}

// repairDrift compares what runs with what is desired every ReconcileInterval, and on each change the
// runtime streams, until ctx ends. It does nothing for a Runtime that cannot observe.
func (a *Agent) repairDrift(ctx context.Context) {
	obs, ok := a.Runtime.(Observer)
	if !ok {
		return
	}
	every := a.ReconcileInterval
	if every <= 0 {
		every = DefaultReconcileInterval
	}
	changed := make(chan struct{}, 1)
	if w, ok := a.Runtime.(Watcher); ok {
		go a.watchRuntime(ctx, w, func() {
			select {
			case changed <- struct{}{}:
			default: // a look is already due; it sees this change too
			}
		})
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-changed:
		}
		a.lookAll(ctx, obs)
	}
}

// watchRuntime runs the runtime's event stream, starting it again (after a pause that grows to a
// minute) whenever it ends, until ctx does.
func (a *Agent) watchRuntime(ctx context.Context, w Watcher, changed func()) {
	pause := time.Second
	for ctx.Err() == nil {
		started := time.Now()
		err := w.Watch(ctx, changed)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > time.Minute {
			pause = time.Second
		}
		msg := "the runtime's event stream ended; drift is repaired on the tick until it is back"
		if err != nil {
			msg = truncate(err.Error(), 480) + "; drift is repaired on the tick until the stream is back"
		}
		a.Log.Info("runtime events lost", "reason", msg)
		a.record(fleet.DeploymentKey{}, SeverityWarning, ReasonRuntimeEventsLost, msg)
		// Whatever happened while the stream was down is found by the next look.
		changed()
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Minute)
	}
}

// lookAll compares every desired deployment with what runs.
func (a *Agent) lookAll(ctx context.Context, obs Observer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for d, t := range a.desired {
		if ctx.Err() != nil {
			return
		}
		if err := a.lookAt(ctx, obs, d, t); err != nil && ctx.Err() == nil {
			a.Log.Error(err, "report drift", "deployment", d)
		}
	}
}

// lookAt compares one deployment with what runs: it reports what it finds (never Running while a
// container does not run), repairs what the restart policy allows, and reports the outcome.
func (a *Agent) lookAt(ctx context.Context, obs Observer, d fleet.DeploymentKey, t *drift) error {
	seen, err := obs.Observe(ctx, d, t.score)
	if err != nil {
		a.record(d, SeverityWarning, ReasonObserveFailed, truncate(err.Error(), 512))
		return nil
	}
	v := t.look(seen, time.Now())
	// The repair does not wait for NATS: a failed report is retried by the next look.
	reportErr := a.apply(ctx, d, t, v)
	if !v.repair {
		return reportErr
	}
	a.Log.Info("repairing drift", "deployment", d, "reason", v.reason)
	// A container being removed behind the agent's back (podman rm -f stops it, which the agent may see,
	// then removes it) can make one attempt fail on a name still in use: try a few times before saying
	// the repair failed.
	for attempt := 1; ; attempt++ {
		if err = a.Runtime.Apply(ctx, d, t.score); err == nil || attempt == repairAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return reportErr
		case <-time.After(repairPause):
		}
	}
	if err == nil {
		if seen, err = obs.Observe(ctx, d, t.score); err != nil {
			a.record(d, SeverityWarning, ReasonObserveFailed, truncate(err.Error(), 512))
			return reportErr
		}
	}
	return errors.Join(reportErr, a.apply(ctx, d, t, t.repaired(seen, err)))
}

// apply records a verdict's event and writes its transition. A failed write is retried by the next look:
// t keeps the phase last written.
func (a *Agent) apply(ctx context.Context, d fleet.DeploymentKey, t *drift, v verdict) error {
	if v.eventWorth {
		// The event names its reason apart: its message does not repeat it.
		a.record(d, v.severity, v.reason, strings.TrimPrefix(v.eventMsg, v.reason+": "))
	}
	if !v.report {
		return nil
	}
	return a.report(ctx, d, t, v.phase, v.msg)
}
