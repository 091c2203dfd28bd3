package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// Fold keeps c equal to the state bucket until ctx ends: a first pass over every record, then every
// change, and a recount from scratch whenever the counters cannot fold a change (a gap in revisions, an
// impossible transition, a record deleted without being withdrawn, a refused record replacing a counted
// one) or the watch breaks (the NATS server restarted). Recounts caused by the fleet's records back off
// (RecountBackoffMin doubling to RecountBackoffMax). synced is called after each (re)count, when the
// counts are the bucket's. Refused records and offending keys go to s.Hooks.
func (s *Store) Fold(ctx context.Context, c *fleet.Counters, synced func()) error {
	return s.refold(ctx, c.Reset, func() error { return s.foldOnce(ctx, c, synced) })
}

// The causes of a recount: the cause label of platform_operator_fleet_recounts_total.
const (
	// CauseStart is the first count of a fold.
	CauseStart = "start"
	// CauseGap is a change the watch lost (a gap in the bucket's revisions).
	CauseGap = "gap"
	// CauseImpossible is a change the counts cannot fold: a transition out of an empty phase, a key
	// deleted without a tombstone or a Removed record, a refused record replacing a counted one.
	CauseImpossible = "impossible"
	// CauseReconnect is a reconnection to NATS, or a watch that broke.
	CauseReconnect = "reconnect"
	// CauseSelector is a Deployment with a new selector: the index counts it from scratch.
	CauseSelector = "selector"
)

// RecountCauses are every cause, for metrics that show each from the start.
var RecountCauses = []string{CauseStart, CauseGap, CauseImpossible, CauseReconnect, CauseSelector}

// The back-off of recounts the fleet's records cause (gaps, impossible transitions): the first after a
// pass that stayed in step for RecountBackoffMax runs at once, the next ones after RecountBackoffMin,
// doubling up to RecountBackoffMax. A device that keeps breaking the chain costs at most one recount a
// minute, never a loop of them.
const (
	RecountBackoffMin = time.Second
	RecountBackoffMax = time.Minute
)

// Hooks are how a fold reports what it refused: set them before folding. Nil hooks do nothing.
type Hooks struct {
	// Rejected is called with each refused record (it moved no count).
	Rejected func(*fleet.Rejection)
	// Offended is called with each key that made a change impossible to fold (KeyError.Quarantined says
	// whether it is quarantined now).
	Offended func(*fleet.KeyError)
	// Recount is called at the start of each count with its cause (a Cause*).
	Recount func(cause string)
}

var (
	// errReconnected ends a pass because the connection reconnected to NATS: changes may be lost.
	errReconnected = errors.New("reconnected to NATS")
	// errSelector ends a pass because a new selector wants a recount.
	errSelector = errors.New("a new selector")
)

// recountCause classifies the error that ended a pass.
func recountCause(err error) string {
	switch {
	case errors.Is(err, errSelector):
		return CauseSelector
	case errors.Is(err, errReconnected):
		return CauseReconnect
	case errors.Is(err, fleet.ErrImpossible) || errors.Is(err, fleet.ErrUnknownRemoval):
		return CauseImpossible
	case errors.Is(err, fleet.ErrGap):
		return CauseGap
	}
	return CauseReconnect
}

// backoff is the delay before the next recount the fleet's records cause. It is not a wait.Backoff: the
// delay depends on why the pass ended (a reconnection or a new selector is recounted at once, a device's
// fault doubles the delay) and falls back to none after a pass that stayed in step, which wait's
// backoffs (one schedule for every retry) do not express.
type backoff struct{ next time.Duration }

// after is the delay before a recount of cause, after a pass that lasted ran.
func (b *backoff) after(cause string, ran time.Duration) time.Duration {
	if ran >= RecountBackoffMax {
		b.next = 0 // in step for a while: the next fault is recounted at once
	}
	switch cause {
	case CauseSelector, CauseReconnect:
		if cause == CauseReconnect && ran < RecountBackoffMin {
			return RecountBackoffMin // the server may be restarting
		}
		return 0
	}
	d := b.next
	b.next = min(max(2*b.next, RecountBackoffMin), RecountBackoffMax)
	return d
}

// refold runs pass, each pass a count from scratch followed by the changes it folds, until ctx ends.
// reset forgets the counts before the first pass and as soon as a pass ends (once per pass), so that
// nothing reads counts known to be wrong while the next recount waits for its back-off.
func (s *Store) refold(ctx context.Context, reset func(), pass func() error) error {
	var b backoff
	cause := CauseStart
	reset()
	for {
		if s.Hooks.Recount != nil {
			s.Hooks.Recount(cause)
		}
		start := time.Now()
		err := pass()
		if ctx.Err() != nil {
			return nil
		}
		cause = recountCause(err)
		reset()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(b.after(cause, time.Since(start))):
		}
	}
}

// rejected reports a refused record or an offending key; it says whether the fold goes on (the record
// moved no count and no recount is needed).
func (s *Store) rejected(err error) bool {
	var (
		rej *fleet.Rejection
		ke  *fleet.KeyError
	)
	switch {
	case errors.As(err, &rej):
		if s.Hooks.Rejected != nil {
			s.Hooks.Rejected(rej)
		}
		return rej.Recount == nil
	case errors.As(err, &ke):
		if s.Hooks.Offended != nil {
			s.Hooks.Offended(ke)
		}
	}
	return false
}

func (s *Store) foldOnce(ctx context.Context, c *fleet.Counters, synced func()) error {
	w, err := s.State.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", fleet.BucketState, err)
	}
	defer stopWatch(w)
	reconnected := s.Reconnected()
	var held heldRecords
	tick := time.NewTicker(HeldReportAfter / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-reconnected:
			return errReconnected // recount at once
		case now := <-tick.C:
			for _, rej := range held.overdue(now) {
				s.rejected(rej)
			}
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("state watch closed")
			}
			if e == nil {
				c.Synced()
				if synced != nil {
					synced()
				}
				continue
			}
			if err := s.foldChange(ctx, c, &held, change(e)); err != nil {
				return err
			}
		}
	}
}

// MaxHeldRecords is how many records of withdrawn devices a fold holds back at once (heldRecords): at
// most MaxHeldRecords times fleet.MaxStateRecordBytes of memory, whatever devices write. Beyond it the
// fold recounts (a device's fault: with the recounts' back-off).
const MaxHeldRecords = 1024

// HeldReportAfter is how long a fold holds a record of a withdrawn device before it reports it as
// refused (Hooks.Rejected, reason untargeted): the Removed record of an honest device's withdrawal
// comes right after the withdrawal and releases its records before that.
const HeldReportAfter = 2 * time.Second

// heldRecords are the records a fold holds back, per state key, because their device's desired state is
// withdrawn by the time the fold reads them but the operator's Removed record has not followed yet. The
// withdrawal (Store.Withdraw) deletes the desired state first, then writes the Removed record, with
// compare-and-swap, after the device's last record, naming that record's phase as its previous one; an
// agent's Report writes only while the desired state exists. So a record the fold finds withdrawn is
// either one the device wrote while it was targeted, which its Removed record follows and takes out of
// the counts (the fold must have counted it: refused, the device stayed counted in its previous phase
// and the Removed record took another device out of this one, for good: issue 34's last bug), or one it
// wrote after its withdrawal, which no Removed record follows. Which one is known when the key's next
// record comes: a Removed record (or the desired state back) folds the held records, then it; until
// then they count nowhere, and after HeldReportAfter they are reported as refused. A fold that lags
// behind the bucket (as after a NATS server is lost, or a stream leader steps down) reads records long
// after they were written, and the withdrawal meanwhile.
type heldRecords struct {
	keys map[string]*heldKey
	n    int
}

type heldKey struct {
	changes []fleet.Change
	rejs    []*fleet.Rejection
	at      []time.Time
	// reported is how many of the changes were reported as refused.
	reported int
	// initial: the first was read in the initial pass (it is the key's current record there).
	initial bool
}

// foldChange folds one change of the state bucket, holding back or refusing it as untargeted says.
func (s *Store) foldChange(ctx context.Context, c *fleet.Counters, held *heldRecords, ch fleet.Change) error {
	rej, withdrawn, err := s.untargeted(ctx, ch)
	if err != nil {
		return err
	}
	h := held.keys[ch.Key]
	switch {
	case rej == nil:
		if h != nil { // the key's Removed record, or its desired state is back: fold what it held first
			held.release(ch.Key)
			for i, hc := range h.changes {
				if err := c.ObserveHeld(hc, i == 0 && h.initial); err != nil && !s.rejected(err) {
					return err
				}
			}
		}
		if err := c.Observe(ch); err != nil && !s.rejected(err) {
			return err
		}
		return nil
	case withdrawn:
		if held.n >= MaxHeldRecords {
			return fmt.Errorf("%w: %s: more than %d records of withdrawn devices held", fleet.ErrImpossible, ch.Key, MaxHeldRecords)
		}
		held.hold(ch, rej, !c.Live(), time.Now())
	default:
		if h != nil { // the desired state is gone for good (the Deployment was deleted)
			held.release(ch.Key)
		}
		s.rejected(rej)
	}
	return c.Pass(ch.Revision)
}

// hold holds ch back under its key; rej is its refusal, reported once it is held HeldReportAfter.
func (h *heldRecords) hold(ch fleet.Change, rej *fleet.Rejection, initial bool, now time.Time) {
	if h.keys == nil {
		h.keys = map[string]*heldKey{}
	}
	k := h.keys[ch.Key]
	if k == nil {
		k = &heldKey{initial: initial}
		h.keys[ch.Key] = k
	}
	k.changes, k.rejs, k.at = append(k.changes, ch), append(k.rejs, rej), append(k.at, now)
	h.n++
}

// release forgets what key holds.
func (h *heldRecords) release(key string) {
	if k := h.keys[key]; k != nil {
		h.n -= len(k.changes)
		delete(h.keys, key)
	}
}

// overdue are the refusals of the records held HeldReportAfter by now and not reported yet.
func (h *heldRecords) overdue(now time.Time) []*fleet.Rejection {
	var out []*fleet.Rejection
	for _, k := range h.keys {
		for ; k.reported < len(k.changes) && now.Sub(k.at[k.reported]) >= HeldReportAfter; k.reported++ {
			out = append(out, k.rejs[k.reported])
		}
	}
	return out
}

// untargeted refuses a state record whose device is not a target of its Deployment: the operator
// never gave that device a desired state for it (no record under its desired key), or withdrew it (a
// delete marker) and the record is not Removed; withdrawn says which (the fold holds such a record back
// until it knows whether a Removed record follows, heldRecords). A device's permissions let it write a
// state key naming itself under any Deployment; refused here, such a key never moves a count, never
// creates the counters' entry of a Deployment, and so costs no memory per forged key. A deletion, a
// record that does not decode and a key outside the contract are left to Counters.Observe (which
// refuses the last two). It costs one direct get of the desired key per state record folded.
func (s *Store) untargeted(ctx context.Context, ch fleet.Change) (rej *fleet.Rejection, withdrawn bool, err error) {
	if ch.Deleted || s.js == nil {
		return nil, false, nil
	}
	d, device, err := fleet.ParseStateKey(ch.Key)
	if err != nil {
		return nil, false, nil
	}
	st, err := fleet.DecodeState(ch.Value)
	if err != nil {
		return nil, false, nil
	}
	if s.desired == nil {
		if s.desired, err = s.js.Stream(ctx, kvStream(fleet.BucketDesired)); err != nil {
			return nil, false, fmt.Errorf("open the stream of %s: %w", fleet.BucketDesired, err)
		}
	}
	subj := "$KV." + fleet.BucketDesired + "." + fleet.DesiredKey(device, d)
	m, err := s.desired.GetLastMsgForSubject(ctx, subj)
	if s.nc != nil && (errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && m.Header.Get("KV-Operation") != "" && st.Phase != fleet.PhaseRemoved)) {
		// Direct gets are answered by any replica of a JetStream cluster, a follower that has not
		// applied the newest writes too: "none", and a withdrawal the device's record contradicts, are
		// confirmed by the stream's leader before they are believed (one request, only for records it
		// would refuse).
		m, err = leaderLastMsg(ctx, s.nc, kvStream(fleet.BucketDesired), subj)
	}
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return untargetedRecord(ch.Key, d, device, "no desired state was ever given to the device"), false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read the desired state of %s for %s: %w", device, d, err)
	}
	if op := m.Header.Get("KV-Operation"); op != "" && st.Phase != fleet.PhaseRemoved {
		return untargetedRecord(ch.Key, d, device, "the deployment was withdrawn from the device"), true, nil
	}
	return nil, false, nil
}

func untargetedRecord(key string, d fleet.DeploymentKey, device, why string) *fleet.Rejection {
	return &fleet.Rejection{Records: fleet.RecordsState, Key: key, Device: device, Deployment: d, Reason: fleet.ReasonUntargeted,
		Err: fmt.Errorf("the deployment does not target this device (%s)", why)}
}

// stopWatch stops a KV watch and drains what it had yet to deliver: the client's delivery blocks on a
// full Updates channel, and a watch stopped in the middle of its initial values would otherwise keep
// every message it had received, and its goroutine, for good. The channel closes once the
// subscription is gone.
func stopWatch(w jetstream.KeyWatcher) {
	_ = w.Stop()
	go func() {
		for range w.Updates() { //nolint:revive // draining
		}
	}()
}

// leaderLastMsg is the last message of subject in stream as the stream's leader has it
// ($JS.API.STREAM.MSG.GET, which only the leader answers, unlike a direct get), or
// jetstream.ErrMsgNotFound. Only the headers are read.
func leaderLastMsg(ctx context.Context, nc *nats.Conn, stream, subject string) (*jetstream.RawStreamMsg, error) {
	req, err := json.Marshal(map[string]string{"last_by_subj": subject})
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	msg, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, fmt.Errorf("read the last message of %s from the leader of %s: %w", subject, stream, err)
	}
	var resp struct {
		Message *struct {
			Header []byte `json:"hdrs"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("read the last message of %s from the leader of %s: %w", subject, stream, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, fmt.Errorf("read the last message of %s from the leader of %s: %w", subject, stream, resp.Error)
	}
	if resp.Message == nil {
		return nil, jetstream.ErrMsgNotFound
	}
	m := &jetstream.RawStreamMsg{Subject: subject, Header: nats.Header{}}
	if h := string(resp.Message.Header); strings.Contains(h, "KV-Operation:") {
		for _, line := range strings.Split(h, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "KV-Operation" {
				m.Header.Set("KV-Operation", strings.TrimSpace(v))
			}
		}
	}
	return m, nil
}
