package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// Heartbeat statuses of a state row.
const (
	// heartbeatAlive is a device whose last heartbeat record is a plain heartbeat (the bucket's TTL has
	// not removed it).
	heartbeatAlive = "alive"
	// heartbeatLapsed is a device the operator counts stale: its last record is the operator's lapsed
	// record.
	heartbeatLapsed = "lapsed"
	// heartbeatExpired is a device whose heartbeat the TTL removed a moment ago: the key holds the marker
	// the operator has not yet replaced with a lapsed record.
	heartbeatExpired = "expired"
	// heartbeatNone is a device that never sent a heartbeat (or whose marker is gone too).
	heartbeatNone = "none"
)

// stateRow is one device's state for a deployment, as -o json prints it.
type stateRow struct {
	Device     string      `json:"device"`
	Generation int64       `json:"generation"`
	Phase      fleet.Phase `json:"phase"`
	Message    string      `json:"message,omitempty"`
	At         time.Time   `json:"at"`
	// Heartbeat is the device's liveness from its last heartbeat-bucket message.
	Heartbeat heartbeatView `json:"heartbeat"`
}

type heartbeatView struct {
	// Status is alive, lapsed, expired or none.
	Status string `json:"status"`
	// At is the last heartbeat's time (alive), when the operator recorded the lapse (lapsed) or when the
	// TTL removed the key (expired).
	At *time.Time `json:"at,omitempty"`
	// LastBeat is, for a lapsed device, its last heartbeat as the operator's lapsed record dates it (the
	// server's expiry of it); absent in a lapse recorded by an operator older than the field.
	LastBeat *time.Time `json:"lastBeat,omitempty"`
}

// runStates prints each device's state for one deployment. It streams the deployment's state records
// (keys <namespace>.<name>.*) and looks up each device's heartbeat (and labels, for --selector) as its
// row goes by: it never holds the fleet, and text output is aligned one page of pageRows at a time.
func runStates(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		o                       options
		namespace, name         string
		selectorFlag, phaseFlag string
	)
	fs := newFlagSet("states", stderr)
	o.bind(fs)
	fs.StringVar(&namespace, "namespace", "", "The iot Deployment's namespace.")
	fs.StringVar(&name, "deployment", "", "The iot Deployment's name.")
	fs.StringVar(&selectorFlag, "selector", "", "Only devices whose labels match this selector (as kubectl -l: k=v,k!=v,k in (a,b),k,!k).")
	fs.StringVar(&phaseFlag, "state", "", "Only devices in this phase: pending, running, failed or removed.")
	if err := o.parse(fs, args); err != nil {
		return err
	}
	if !fleet.ValidToken(namespace) || !fleet.ValidToken(name) {
		return usagef("--namespace and --deployment must name an iot Deployment (got %q and %q)", namespace, name)
	}
	selector, err := labels.Parse(selectorFlag)
	if err != nil {
		return usagef("--selector: %v", err)
	}
	phase, err := parsePhase(phaseFlag)
	if err != nil {
		return err
	}
	s, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	ctx = s.ctx

	var (
		tbl  *table
		list = &jsonList{w: stdout}
	)
	if o.output == "text" {
		tbl = newTable(stdout, "DEVICE", "GENERATION", "PHASE", "AT", "HEARTBEAT", "MESSAGE")
	}
	d := fleet.DeploymentKey{Namespace: namespace, Name: name}
	err = eachState(ctx, s, d, o.timeout, func(device string, st *fleet.State) error {
		if phase != fleet.PhaseNone && st.Phase != phase {
			return nil
		}
		if !selector.Empty() {
			lbls, err := deviceLabels(ctx, s, device, o.timeout)
			if err != nil {
				return err
			}
			if !selector.Matches(labels.Set(lbls)) {
				return nil
			}
		}
		hb, err := heartbeatOf(ctx, s, device, o.timeout)
		if err != nil {
			return err
		}
		row := stateRow{Device: device, Generation: st.Generation, Phase: st.Phase, Message: st.Message, At: st.At, Heartbeat: hb}
		if tbl == nil {
			list.add(row)
			return list.err
		}
		beat := hb.Status
		if hb.At != nil {
			beat += " " + textTime(*hb.At)
		}
		if hb.LastBeat != nil {
			beat += " (last heartbeat " + textTime(*hb.LastBeat) + ")"
		}
		tbl.row(device, strconv.FormatInt(st.Generation, 10), string(st.Phase), textTime(st.At), beat, orDash(st.Message))
		return nil
	})
	if tbl != nil {
		if ferr := tbl.flush(); err == nil {
			err = ferr
		}
	} else if err == nil {
		err = list.close()
	}
	if err != nil {
		return readError(s, err)
	}
	return nil
}

func parsePhase(s string) (fleet.Phase, error) {
	if s == "" {
		return fleet.PhaseNone, nil
	}
	for _, p := range []fleet.Phase{fleet.PhasePending, fleet.PhaseRunning, fleet.PhaseFailed, fleet.PhaseRemoved} {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	return fleet.PhaseNone, usagef("--state must be pending, running, failed or removed, not %q", s)
}

// eachState calls fn with the current state record of every device of deployment d, in the order of
// their last writes, and returns once the server has sent them all. It watches the keys
// <namespace>.<name>.* and handles each record as it arrives: the watch's consumer is under JetStream
// flow control, so the server sends ahead only as much as the client has not yet taken, whatever the
// fleet's size. Deleted and purged keys, and records outside the contract, are skipped. The listing
// has no deadline of its own (a large fleet takes a while); idle is how long the server may send nothing.
func eachState(ctx context.Context, s *session, d fleet.DeploymentKey, idle time.Duration, fn func(device string, st *fleet.State) error) error {
	bctx, bcancel := context.WithTimeout(ctx, idle)
	kv, err := s.js.KeyValue(bctx, fleet.BucketState)
	bcancel()
	if err != nil {
		return fmt.Errorf("bind bucket %s: %w", fleet.BucketState, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kv.Watch(ctx, fleet.StateDeploymentFilter(d), jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("watch bucket %s: %w", fleet.BucketState, err)
	}
	defer func() { _ = w.Stop() }()
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		timer.Reset(idle)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("watch bucket %s: the NATS server sent nothing for %s: %w", fleet.BucketState, idle, context.DeadlineExceeded)
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("watch bucket %s: closed before its current records", fleet.BucketState)
			}
			if e == nil {
				return nil
			}
			dk, device, err := fleet.ParseStateKey(e.Key())
			if err != nil || dk != d {
				continue
			}
			st, err := fleet.DecodeState(e.Value())
			if err != nil {
				continue
			}
			if err := fn(device, st); err != nil {
				return err
			}
		}
	}
}

// deleted says whether a key-value message is a deletion: a KV delete or purge, or the marker the
// server leaves when a key's TTL removes it.
func deleted(h nats.Header) bool {
	return h.Get(jetstream.MarkerReasonHeader) != "" || h.Get("KV-Operation") != ""
}

// lastMsg is the last message of key in bucket, headers included, or nil when the key has none. It uses
// JetStream's direct get (the key-value buckets allow it), which needs no stream information first.
func lastMsg(ctx context.Context, s *session, bucket, key string, timeout time.Duration) (*nats.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := s.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET.KV_"+bucket+".$KV."+bucket+"."+key, nil)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("bucket %s does not exist on this server (is it the fleet's?)", bucket)
		}
		return nil, fmt.Errorf("read %s in %s: %w", key, bucket, err)
	}
	if len(m.Data) == 0 && m.Header.Get("Status") != "" {
		if m.Header.Get("Status") == "404" {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s in %s: %s %s", key, bucket, m.Header.Get("Status"), m.Header.Get("Description"))
	}
	return m, nil
}

// deviceLabels are a device's labels (nil when it has no record or a tombstone).
func deviceLabels(ctx context.Context, s *session, device string, timeout time.Duration) (map[string]string, error) {
	m, err := lastMsg(ctx, s, fleet.BucketDevices, fleet.DeviceKey(device), timeout)
	if err != nil || m == nil || deleted(m.Header) {
		return nil, err
	}
	d, err := fleet.DecodeDevice(m.Data)
	if err != nil || d.Removed {
		return nil, nil //nolint:nilerr // a record outside the contract selects nothing
	}
	return d.Labels, nil
}

// heartbeatOf reads a device's liveness from the last message of its heartbeat key. A plain key-value
// Get cannot tell a key the TTL removed (a marker) from one that never existed; the message's headers
// can.
func heartbeatOf(ctx context.Context, s *session, device string, timeout time.Duration) (heartbeatView, error) {
	m, err := lastMsg(ctx, s, fleet.BucketHeartbeats, fleet.DeviceKey(device), timeout)
	if err != nil || m == nil {
		return heartbeatView{Status: heartbeatNone}, err
	}
	if deleted(m.Header) {
		v := heartbeatView{Status: heartbeatExpired}
		if t, err := time.Parse(time.RFC3339Nano, m.Header.Get("Nats-Time-Stamp")); err == nil {
			v.At = &t
		}
		return v, nil
	}
	h, err := fleet.DecodeHeartbeat(m.Data)
	if err != nil {
		return heartbeatView{Status: heartbeatNone}, nil //nolint:nilerr // a record outside the contract says nothing
	}
	at := h.At
	if h.Lapsed != nil {
		return heartbeatView{Status: heartbeatLapsed, At: &at, LastBeat: h.Lapsed.LastBeat}, nil
	}
	return heartbeatView{Status: heartbeatAlive, At: &at}, nil
}

// readError says why reading the buckets failed.
func readError(s *session, err error) error {
	if e := s.explain(err); errors.Is(e, errPermission) {
		return e
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("the fleet's buckets do not exist on this server (is the operator connected to it?): %w", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the NATS server did not answer in time: %w", err)
	}
	return err
}
