package agent

import (
	"errors"
	"strings"
	"testing"
	"time"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// Observations of one service's container, for the drift tables.
var (
	up      = ContainerStatus{Container: "iot-shop-web-a", Present: true, Current: true, Running: true}
	gone    = ContainerStatus{Container: "iot-shop-web-a"}
	stopped = ContainerStatus{Container: "iot-shop-web-a", Present: true, Current: true, ExitCode: 137}
	other   = ContainerStatus{Container: "iot-shop-web-a", Present: true, Running: true}
)

func restartedN(n int) ContainerStatus { c := up; c.Restarts = n; return c }

func withPolicy(c ContainerStatus, p iotv1.RestartPolicy, exit int) ContainerStatus {
	c.RestartPolicy, c.ExitCode = p, exit
	return c
}

// driftStep is one look, and, when the look repairs, the repair's outcome and the look after it.
type driftStep struct {
	obs ContainerStatus
	// after is what the runtime shows after the repair; repairErr is the repair's error.
	after     ContainerStatus
	repairErr error
	// at is the look's time, from the table's start.
	at time.Duration
	// want is the phase reported after the look, wantRepair whether it repairs, wantFinal the phase
	// after the repair (the look's when none), reason the look's event reason ("" none).
	want       fleet.Phase
	wantRepair bool
	wantFinal  fleet.Phase
	reason     string
}

// TestDriftStateMachine drives the drift repair's decisions through sequences of observations, starting
// from a deployment reported Running, and checks after every look that a deployment whose container does
// not run is never reported Running: the counters, which fold the reports, never count it running.
func TestDriftStateMachine(t *testing.T) {
	tests := []struct {
		name  string
		steps []driftStep
	}{
		{"removed behind the agent's back, then recreated", []driftStep{
			{obs: up, want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning},
			{obs: gone, after: up, want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhaseRunning, reason: ReasonContainerMissing},
			{obs: up, want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning},
		}},
		{"stopped behind the agent's back, then started", []driftStep{
			{obs: stopped, after: up, want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhaseRunning, reason: ReasonContainerExited},
			{obs: up, want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning},
		}},
		{"replaced by a container of another spec", []driftStep{
			{obs: other, after: up, want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhaseRunning, reason: ReasonContainerReplaced},
		}},
		{"the repair does not take at once: Pending until a look finds it running", []driftStep{
			{obs: gone, after: stopped, want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhasePending, reason: ReasonContainerMissing},
			{obs: up, want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning, reason: ReasonRepaired},
		}},
		{"keeps exiting: Failed after three looks, repairs paced, Running once steady", []driftStep{
			{obs: stopped, after: up, want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhaseRunning, reason: ReasonContainerExited},
			{at: time.Second, obs: stopped, after: up, want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhaseRunning, reason: ReasonContainerExited},
			{at: 2 * time.Second, obs: stopped, after: up, want: fleet.PhaseFailed, wantRepair: true, wantFinal: fleet.PhaseFailed, reason: ReasonCrashLoop},
			// Within the back-off: reported, not repaired.
			{at: 3 * time.Second, obs: stopped, want: fleet.PhaseFailed, wantFinal: fleet.PhaseFailed, reason: ReasonCrashLoop},
			{at: 13 * time.Second, obs: stopped, after: up, want: fleet.PhaseFailed, wantRepair: true, wantFinal: fleet.PhaseFailed, reason: ReasonCrashLoop},
			// The back-off doubled: 20 s from the last repair.
			{at: 30 * time.Second, obs: stopped, want: fleet.PhaseFailed, wantFinal: fleet.PhaseFailed, reason: ReasonCrashLoop},
			{at: 33 * time.Second, obs: stopped, after: up, want: fleet.PhaseFailed, wantRepair: true, wantFinal: fleet.PhaseFailed, reason: ReasonCrashLoop},
			{at: 40 * time.Second, obs: up, want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning, reason: ReasonRepaired},
			// Steady again: one stop is drift, not a loop.
			{at: 50 * time.Second, obs: stopped, after: up, want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhaseRunning, reason: ReasonContainerExited},
		}},
		{"podman's restart policy restarts it again and again", []driftStep{
			{obs: restartedN(0), want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning},
			{obs: restartedN(1), want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning, reason: ReasonContainerRestarted},
			{obs: restartedN(4), want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning, reason: ReasonContainerRestarted},
			{obs: restartedN(9), want: fleet.PhaseFailed, wantFinal: fleet.PhaseFailed, reason: ReasonCrashLoop},
			{obs: restartedN(9), want: fleet.PhaseRunning, wantFinal: fleet.PhaseRunning, reason: ReasonRepaired},
		}},
		{"restart policy Never keeps an exited container stopped: Failed, not restarted", []driftStep{
			{obs: withPolicy(stopped, iotv1.RestartNever, 0), want: fleet.PhaseFailed, wantFinal: fleet.PhaseFailed, reason: ReasonCompleted},
			{obs: withPolicy(stopped, iotv1.RestartNever, 0), want: fleet.PhaseFailed, wantFinal: fleet.PhaseFailed, reason: ReasonCompleted},
		}},
		{"OnFailure: exit 0 stays stopped, a failure is restarted", []driftStep{
			{obs: withPolicy(stopped, iotv1.RestartOnFailure, 0), want: fleet.PhaseFailed, wantFinal: fleet.PhaseFailed, reason: ReasonCompleted},
		}},
		{"OnFailure after a failure is repaired", []driftStep{
			{obs: withPolicy(stopped, iotv1.RestartOnFailure, 1), after: up, want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhaseRunning, reason: ReasonContainerExited},
		}},
		{"the repair fails: Failed with the reason, repaired at a later look", []driftStep{
			{obs: gone, repairErr: errors.New("image gone"), want: fleet.PhasePending, wantRepair: true, wantFinal: fleet.PhaseFailed, reason: ReasonContainerMissing},
			// Already Failed: the look writes nothing new, repairs again.
			{obs: gone, after: up, want: fleet.PhaseFailed, wantRepair: true, wantFinal: fleet.PhaseRunning, reason: ReasonContainerMissing},
		}},
	}
	start := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &drift{gen: 1, phase: fleet.PhaseRunning}
			for i, st := range tt.steps {
				v := s.look([]ContainerStatus{st.obs}, start.Add(st.at))
				if v.report {
					s.phase, s.msg = v.phase, v.msg
				}
				if s.phase == fleet.PhaseRunning && !st.obs.Running {
					t.Fatalf("step %d: reported Running while the container does not run (%+v)", i, st.obs)
				}
				if s.phase != st.want || v.repair != st.wantRepair || (v.eventWorth && v.reason != st.reason) || (!v.eventWorth && st.reason != "") {
					t.Fatalf("step %d: %v; phase %s, want %s, repair %v, reason %q", i, v, s.phase, st.want, st.wantRepair, st.reason)
				}
				if v.report && v.phase != fleet.PhaseRunning && !strings.Contains(v.msg, v.reason) {
					t.Errorf("step %d: the message %q does not say the reason %s", i, v.msg, v.reason)
				}
				if v.repair {
					var after []ContainerStatus
					if st.repairErr == nil {
						after = []ContainerStatus{st.after}
					}
					if r := s.repaired(after, st.repairErr); r.report {
						s.phase, s.msg = r.phase, r.msg
					}
					if s.phase == fleet.PhaseRunning && st.repairErr == nil && !st.after.Running {
						t.Fatalf("step %d: reported Running after a repair that left it stopped", i)
					}
				}
				if s.phase != st.wantFinal {
					t.Fatalf("step %d: final phase %s, want %s (%q)", i, s.phase, st.wantFinal, s.msg)
				}
			}
		})
	}
}

// TestDriftCrashLoopMessageIsStable: while a deployment keeps crashing, each look reports the same
// record, so the state is not rewritten at every look.
func TestDriftCrashLoopMessageIsStable(t *testing.T) {
	s := &drift{gen: 1, phase: fleet.PhaseRunning}
	now := time.Now()
	var msgs []string
	for i := range 6 {
		v := s.look([]ContainerStatus{stopped}, now.Add(time.Duration(i)*time.Minute))
		if v.report {
			s.phase, s.msg = v.phase, v.msg
		}
		if i >= CrashLoopThreshold-1 {
			msgs = append(msgs, s.msg)
		}
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Fatalf("the crash-loop message changed: %q then %q", msgs[0], m)
		}
	}
}

func TestEventRing(t *testing.T) {
	var r ring
	for i := range EventRingSize + 8 {
		r.add(Event{Severity: SeverityInfo, Reason: ReasonApplied, Message: strings.Repeat("x", i), Namespace: "shop", Name: "web"})
	}
	got, beat := r.snapshot(fleet.DeploymentKey{})
	if len(got) != EventRingSize || got[0].Message != strings.Repeat("x", 8) || beat != nil {
		t.Fatalf("%d events, first %q, heartbeat %v", len(got), got[0].Message, beat)
	}
	// A repeat of the newest event of a deployment is counted, not appended.
	r.add(Event{Severity: SeverityInfo, Reason: ReasonApplied, Message: strings.Repeat("x", EventRingSize+7), Namespace: "shop", Name: "web"})
	got, _ = r.snapshot(fleet.DeploymentKey{Namespace: "shop", Name: "web"})
	if n := got[len(got)-1].Count; n != 2 || len(got) != EventRingSize {
		t.Errorf("a repeat: count %d, %d events", n, len(got))
	}
	r.add(Event{Severity: SeverityError, Reason: strings.Repeat("R", 500), Message: strings.Repeat("m", 5000), Namespace: "other", Name: "db"})
	r.heartbeat(time.Unix(100, 0))
	got, beat = r.snapshot(fleet.DeploymentKey{Namespace: "other", Name: "db"})
	if len(got) != 1 || len(got[0].Reason) != maxReason || len(got[0].Message) != maxMessage || beat == nil || !beat.Equal(time.Unix(100, 0)) {
		t.Errorf("one deployment's events: %d, reason %d bytes, message %d bytes, heartbeat %v", len(got), len(got[0].Reason), len(got[0].Message), beat)
	}
}
