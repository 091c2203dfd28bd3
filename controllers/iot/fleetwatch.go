package iot

import (
	"context"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// Event reasons of the fleet's bad input (docs/fleet.md, "Bad input").
const (
	// EventRejectedRecord is a device's record the operator refused: it moved no count.
	EventRejectedRecord = "RejectedRecord"
	// EventDeviceQuarantined is a device whose state records keep breaking their chain: they count
	// nowhere until it writes a consistent chain again.
	EventDeviceQuarantined = "DeviceQuarantined"
)

// reportRejected counts a refused record and tells the Deployment its key names (a Warning event,
// rate-limited per device), or the log when the key names none.
func (w *fleetWatch) reportRejected(ctx context.Context, rej *fleet.Rejection) {
	r := w.r
	rejectedRecords.WithLabelValues(rej.Records, rej.Reason).Inc()
	who := rej.Device
	if who == "" {
		who = "(no device)"
	}
	if !w.reports.allow(rej.Records+"/"+who, r.clock()) {
		return
	}
	if d := r.deploymentOf(ctx, rej.Deployment); d != nil {
		r.session(d).Warnf(EventRejectedRecord, "device %s: %s; it counts nowhere (further refusals of this device are not reported for %s)", who, rej.Error(), reportWindow)
		return
	}
	ctrl.LoggerFrom(ctx).WithName("fleet").Info("refused a device record", "device", who, "bucket", rej.Records, "reason", rej.Reason, "error", rej.Error())
}

// reportOffender tells the Deployment of a key that made a change impossible to fold, when the key is
// quarantined for it; a first offence is only logged.
func (w *fleetWatch) reportOffender(ctx context.Context, ke *fleet.KeyError) {
	r := w.r
	log := ctrl.LoggerFrom(ctx).WithName("fleet")
	if !ke.Quarantined || !w.reports.allow("quarantine/"+ke.Key, r.clock()) {
		log.Info("a state record could not be folded; recounting", "device", ke.Device, "deployment", ke.Deployment.String(), "error", ke.Error())
		return
	}
	if d := r.deploymentOf(ctx, ke.Deployment); d != nil {
		r.session(d).Warnf(EventDeviceQuarantined,
			"device %s keeps writing state records that do not follow its previous one (%v); its records count nowhere until it writes %d consistent ones",
			ke.Device, ke.Err, fleet.ReleaseAfter)
	}
	log.Info("quarantined a device's state key", "device", ke.Device, "deployment", ke.Deployment.String(), "error", ke.Error())
}

// deploymentOf is the Deployment named d, from the cache, or nil.
func (r *DeploymentReconciler) deploymentOf(ctx context.Context, d fleet.DeploymentKey) *iotv1.Deployment {
	if d.Name == "" {
		return nil
	}
	var dep iotv1.Deployment
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, &dep); err != nil {
		return nil
	}
	return &dep
}

// fleetWatch is the manager runnable that follows the fleet in NATS: it folds the state bucket into the
// phase counters and the device and heartbeat buckets into the index (matched and stale devices per
// selector), and every StatusInterval wakes the Deployments whose counts changed (all of them after a
// recount), so that a Deployment's status is written at most once per interval however fast its devices
// move.
type fleetWatch struct {
	r *DeploymentReconciler
	// reports bounds the events and logs bad input causes.
	reports reportLimiter
}

// NeedLeaderElection: only the leader publishes and writes status.
func (w *fleetWatch) NeedLeaderElection() bool { return true }

// Start runs until ctx ends.
func (w *fleetWatch) Start(ctx context.Context) error {
	r := w.r
	log := ctrl.LoggerFrom(ctx).WithName("fleet")
	st := r.store.Load()
	fleetConn.Store(st)
	fleetGauges.reader.Store(&readerBox{r.Client})
	st.Hooks = store.Hooks{
		Rejected: func(rej *fleet.Rejection) { w.reportRejected(ctx, rej) },
		Offended: func(ke *fleet.KeyError) { w.reportOffender(ctx, ke) },
		Recount:  func(cause string) { recounts.WithLabelValues(cause).Inc() },
	}
	go func() {
		if err := r.store.Load().Fold(ctx, &r.counters, func() {
			log.Info("fleet counters in step with the state bucket", "recounts", r.counters.Recounts())
			r.devicesChanged.Store(true)
		}); err != nil {
			log.Error(err, "fold the state bucket")
		}
	}()
	go func() {
		if err := r.store.Load().FoldIndex(ctx, &r.index, func() {
			log.Info("fleet device index in step with the device and heartbeat buckets", "recounts", r.index.Recounts())
			r.devicesChanged.Store(true)
		}); err != nil {
			log.Error(err, "fold the device and heartbeat buckets")
		}
	}()

	interval := r.StatusInterval
	if interval <= 0 {
		interval = DefaultStatusInterval
	}
	// A Deployment whose counts changed is woken once they have been still for a tenth of the interval (a
	// batch of changes lands in one status) or have kept moving for a whole interval, and at most once
	// per interval.
	settle := interval / 10
	pending := map[fleet.DeploymentKey]*changes{} // changes not yet woken for
	woken := map[fleet.DeploymentKey]time.Time{}  // last wake
	t := time.NewTicker(settle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := time.Now()
		if r.devicesChanged.Swap(false) {
			var list iotv1.DeploymentList
			if err := r.Client.List(ctx, &list); err != nil {
				log.Error(err, "list Deployments after a recount")
				r.devicesChanged.Store(true)
				continue
			}
			r.counters.Dirty() // every Deployment is woken now
			r.index.Dirty()
			clear(pending)
			clear(woken)
			for i := range list.Items {
				r.wakeUp(ctx, types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
				woken[fleet.DeploymentKey{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}] = now
			}
			continue
		}
		for _, d := range append(r.counters.Dirty(), r.index.Dirty()...) {
			if c := pending[d]; c != nil {
				c.last = now
			} else {
				pending[d] = &changes{first: now, last: now}
			}
		}
		for d, c := range pending {
			if now.Sub(c.last) < settle && now.Sub(c.first) < interval || now.Sub(woken[d]) < interval {
				continue
			}
			delete(pending, d)
			woken[d] = now
			r.wakeUp(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
		}
		for d, at := range woken {
			if now.Sub(at) >= interval {
				delete(woken, d) // one entry per Deployment woken in the last interval, never more
			}
		}
	}
}

// changes are when a Deployment's counts first and last changed since it was last woken.
type changes struct{ first, last time.Time }

// natsConnector connects to NATS in the background, retrying until the server answers, then runs the
// fleet watch: the operator starts (and serves its other APIs) whether or not NATS is up.
type natsConnector struct {
	r *DeploymentReconciler
	// reader reads the FleetBroker and its Secrets from the API server when r.NATS.Broker is set.
	reader client.Reader
}

// NeedLeaderElection: only the leader talks to the fleet.
func (c *natsConnector) NeedLeaderElection() bool { return true }

// Start connects, then follows the fleet until ctx ends.
func (c *natsConnector) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("fleet")
	fleetGauges.reader.Store(&readerBox{c.r.Client}) // the Deployments' gauges, while connecting too
	var closeNATS func()
	// Tried at once, then natsRetry after each failure, until it connects or ctx ends.
	err := wait.ExponentialBackoffWithContext(ctx, retryForever(natsRetry), func(ctx context.Context) (bool, error) {
		opts := *c.r.NATS
		if opts.Broker != nil {
			var err error
			if opts, err = resolveBroker(ctx, c.reader, opts); err != nil {
				log.Info("waiting for the fleet broker; retrying", "broker", opts.Broker.String(), "reason", err.Error())
				return false, nil
			}
		}
		st, closeConn, err := Connect(ctx, opts, 10*time.Second)
		if err != nil {
			log.Error(err, "connect to NATS; retrying", "url", opts.Redacted())
			return false, nil
		}
		closeNATS = closeConn
		c.r.trust(log, st)
		c.r.store.Store(st)
		return true, nil
	})
	if err != nil {
		return nil // ctx ended
	}
	defer closeNATS()
	log.Info("connected to NATS", "url", c.r.NATS.Redacted())
	return (&fleetWatch{r: c.r}).Start(ctx)
}

// retryForever is a wait.Backoff that waits every between two tries, as often as it takes.
func retryForever(every time.Duration) wait.Backoff {
	return wait.Backoff{Duration: every, Steps: math.MaxInt}
}
