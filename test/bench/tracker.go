package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	ctrl "github.com/platform-operator/platform-operator/controllers/irc"
	"github.com/platform-operator/platform-operator/internal/ergo"
	"github.com/platform-operator/platform-operator/internal/scheme"
)

// Child kinds a bench network has; a network has converged when it has all of them and its status has
// observed its generation.
const (
	kindConfigMap uint8 = 1 << iota
	kindPVC
	kindDeployment
	kindService
	kindCertificate
	kindRoute
	allKinds = kindConfigMap | kindPVC | kindDeployment | kindService | kindCertificate | kindRoute
)

// childrenPerNetwork is how many objects a bench network's children are.
const childrenPerNetwork = 6

// tracker watches one namespace, as a client of the API server would, and notes when each network
// converges and when each spec edit reaches the ConfigMap and the Deployment's pod template.
type tracker struct {
	cache  cache.Cache
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	nets      map[string]*netState
	converged int
	target    int
	reached   chan struct{} // closed when converged reaches target
	lastAt    time.Time     // when the last network converged

	configLatency, rolloutLatency []time.Duration
}

type netState struct {
	kinds      uint8
	generation int64
	observed   int64
	converged  bool
	digest     string // the Deployment's pod-template config digest
	config     string // the ConfigMap's ircd.yaml
	edit       *edit
}

// edit is one spec change under way.
type edit struct {
	marker        string
	at            time.Time
	digestBefore  string
	configApplied time.Duration
}

func newTracker(ctx context.Context, cfg *rest.Config, namespace string) (*tracker, error) {
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{ctrl.ManagedByLabel: ctrl.FieldOwner})}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            scheme.Scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: managed, &corev1.PersistentVolumeClaim{}: managed, &appsv1.Deployment{}: managed,
			&corev1.Service{}: managed, &cmv1.Certificate{}: managed, &routev1.Route{}: managed,
		},
	})
	if err != nil {
		return nil, err
	}
	t := &tracker{cache: c, nets: map[string]*netState{}, done: make(chan struct{})}
	handlers := map[client.Object]func(client.Object){
		&ircv1.ErgoNetwork{}:            t.onNetwork,
		&corev1.ConfigMap{}:             t.onChild(kindConfigMap),
		&corev1.PersistentVolumeClaim{}: t.onChild(kindPVC),
		&appsv1.Deployment{}:            t.onChild(kindDeployment),
		&corev1.Service{}:               t.onChild(kindService),
		&cmv1.Certificate{}:             t.onChild(kindCertificate),
		&routev1.Route{}:                t.onChild(kindRoute),
	}
	for obj, f := range handlers {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { f(o.(client.Object)) },
			UpdateFunc: func(_, o any) { f(o.(client.Object)) },
		}); err != nil {
			return nil, err
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	go func() {
		defer close(t.done)
		_ = c.Start(runCtx)
	}()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("tracker: cache did not sync")
	}
	return t, nil
}

func (t *tracker) stop() {
	t.cancel()
	<-t.done
}

func (t *tracker) state(name string) *netState {
	s := t.nets[name]
	if s == nil {
		s = &netState{}
		t.nets[name] = s
	}
	return s
}

// expect resets the convergence count: reached closes once n networks have converged.
func (t *tracker) expect(n int) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.target, t.reached = n, make(chan struct{})
	t.check()
	return t.reached
}

func (t *tracker) convergedCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.converged
}

func (t *tracker) lastConverged() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastAt
}

func (t *tracker) check() {
	if t.reached != nil && t.converged >= t.target {
		select {
		case <-t.reached:
		default:
			close(t.reached)
		}
	}
}

func (t *tracker) update(s *netState) {
	if !s.converged && s.kinds == allKinds && s.generation > 0 && s.observed == s.generation {
		s.converged = true
		t.converged++
		t.lastAt = time.Now()
		t.check()
	}
}

func (t *tracker) onNetwork(o client.Object) {
	n := o.(*ircv1.ErgoNetwork)
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(n.Name)
	s.generation, s.observed = n.Generation, n.Status.ObservedGeneration
	t.update(s)
}

func (t *tracker) onChild(kind uint8) func(client.Object) {
	return func(o client.Object) {
		name := o.GetLabels()["app.kubernetes.io/instance"]
		if name == "" {
			return
		}
		now := time.Now()
		t.mu.Lock()
		defer t.mu.Unlock()
		s := t.state(name)
		s.kinds |= kind
		switch o := o.(type) {
		case *corev1.ConfigMap:
			s.config = o.Data[ergo.ConfigKey]
		case *appsv1.Deployment:
			s.digest = o.Spec.Template.Annotations[ergo.ConfigDigestAnnotation]
		}
		if e := s.edit; e != nil {
			if e.configApplied == 0 && strings.Contains(s.config, e.marker) {
				e.configApplied = now.Sub(e.at)
			}
			if e.configApplied != 0 && s.digest != e.digestBefore {
				t.configLatency = append(t.configLatency, e.configApplied)
				t.rolloutLatency = append(t.rolloutLatency, now.Sub(e.at))
				s.edit = nil
			}
		}
		t.update(s)
	}
}

// startEdit notes that name's spec is about to change to carry marker; it fails when an earlier edit of
// the same network has not been applied yet (the churn picks networks so that it does not happen).
func (t *tracker) startEdit(name, marker string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(name)
	if s.edit != nil {
		return fmt.Errorf("network %s edited again before its last edit was applied", name)
	}
	s.edit = &edit{marker: marker, at: time.Now(), digestBefore: s.digest}
	return nil
}

// latencies returns the finished edits' latencies and how many edits are still outstanding.
func (t *tracker) latencies() (config, rollout []time.Duration, pending int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.nets {
		if s.edit != nil {
			pending++
		}
	}
	config = append([]time.Duration(nil), t.configLatency...)
	rollout = append([]time.Duration(nil), t.rolloutLatency...)
	return config, rollout, pending
}

// percentile is the p-th percentile (0-100) of ds by the nearest-rank method; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s)) + 0.999999)
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}
