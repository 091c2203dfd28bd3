package iot

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

// fleetWatch is the manager runnable that follows the fleet in NATS: it folds the state bucket into the
// counters, notes device registry changes, and every StatusInterval wakes the Deployments whose counts
// changed (all of them after a device change or a recount), so that a Deployment's status is written at
// most once per interval however fast its devices move.
type fleetWatch struct {
	r *DeploymentReconciler
}

// NeedLeaderElection: only the leader publishes and writes status.
func (w *fleetWatch) NeedLeaderElection() bool { return true }

// Start runs until ctx ends.
func (w *fleetWatch) Start(ctx context.Context) error {
	r := w.r
	log := ctrl.LoggerFrom(ctx).WithName("fleet")
	go func() {
		if err := r.store.Load().Fold(ctx, &r.counters, func() {
			log.Info("fleet counters in step with the state bucket", "recounts", r.counters.Recounts())
			r.devicesChanged.Store(true)
		}); err != nil {
			log.Error(err, "fold the state bucket")
		}
	}()
	go w.watchDevices(ctx)

	interval := r.StatusInterval
	if interval <= 0 {
		interval = DefaultStatusInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if r.devicesChanged.Swap(false) {
			var list iotv1.DeploymentList
			if err := r.Client.List(ctx, &list); err != nil {
				log.Error(err, "list Deployments after a device change")
				r.devicesChanged.Store(true)
				continue
			}
			for i := range list.Items {
				r.wakeUp(ctx, types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
			}
			r.counters.Dirty() // every Deployment is woken already
			continue
		}
		for _, d := range r.counters.Dirty() {
			r.wakeUp(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
		}
	}
}

// watchDevices flags every change of the device registry (a device registered, relabelled or
// removed): selectors are evaluated again.
func (w *fleetWatch) watchDevices(ctx context.Context) {
	for ctx.Err() == nil {
		kw, err := w.r.store.Load().Devices.WatchAll(ctx, jetstream.UpdatesOnly())
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "watch the device registry")
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		w.follow(ctx, kw)
		_ = kw.Stop()
	}
}

func (w *fleetWatch) follow(ctx context.Context, kw jetstream.KeyWatcher) {
	reconnected := w.r.store.Load().Reconnected()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reconnected:
			// Changes during the outage were missed: look at every Deployment again, and watch anew.
			w.r.devicesChanged.Store(true)
			return
		case e, ok := <-kw.Updates():
			if !ok {
				return
			}
			if e != nil {
				w.r.devicesChanged.Store(true)
			}
		}
	}
}

// natsConnector connects to NATS in the background, retrying until the server answers, then runs the
// fleet watch: the operator starts (and serves its other APIs) whether or not NATS is up.
type natsConnector struct {
	r *DeploymentReconciler
}

// NeedLeaderElection: only the leader talks to the fleet.
func (c *natsConnector) NeedLeaderElection() bool { return true }

// Start connects, then follows the fleet until ctx ends.
func (c *natsConnector) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("fleet")
	for {
		st, closeNATS, err := Connect(ctx, *c.r.NATS, 10*time.Second)
		if err == nil {
			defer closeNATS()
			c.r.store.Store(st)
			log.Info("connected to NATS", "url", c.r.NATS.URL)
			return (&fleetWatch{r: c.r}).Start(ctx)
		}
		log.Error(err, "connect to NATS; retrying", "url", c.r.NATS.URL)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(natsRetry):
		}
	}
}
