package metrics

import (
	"context"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

// ReasonNoCondition is the reason label of objects without a Ready condition (ready="Unknown").
const ReasonNoCondition = "NoCondition"

// maxReasons bounds the reason label values of one kind in one scrape; further reasons count as Other.
// The operator's reasons are constants, far fewer than this; the bound is against a status written by
// someone else.
const maxReasons = 32

// listTimeout bounds one kind's list at a scrape: a cache still syncing must not hold the scrape.
const listTimeout = 5 * time.Second

// reasonPattern is what a condition reason looks like (metav1.Condition's own validation, shorter): any
// other value counts as Other.
var reasonPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

var (
	objectsDesc = prometheus.NewDesc(Namespace+"_objects",
		"Objects of each API kind by their Ready condition's status and reason (no Ready condition: ready=\"Unknown\", reason=\"NoCondition\").",
		[]string{"kind", "ready", "reason"}, nil)
	notReadyDesc = prometheus.NewDesc(Namespace+"_objects_not_ready_seconds",
		"Age of the oldest current not-Ready state among the objects of a kind: now minus the Ready condition's lastTransitionTime (or the creation); 0 when all are Ready.",
		[]string{"kind"}, nil)
	cleanupsBlockedDesc = prometheus.NewDesc(Namespace+"_cleanups_blocked",
		"Objects being deleted whose cleanup is blocked: a finalizer held and the cleanup condition not True (and not merely waiting its turn).",
		[]string{"kind"}, nil)
	dependencyWaitsDesc = prometheus.NewDesc(Namespace+"_dependency_waits",
		"Objects waiting for a dependency (missing, or not Ready yet), by kind and the dependency's kind.",
		[]string{"kind", "dependency"}, nil)
	domainCertificatesDesc = prometheus.NewDesc(Namespace+"_domain_certificates",
		"Domains by their Certificate condition's status (no condition: Unknown).",
		[]string{"ready"}, nil)
	environmentsDesc = prometheus.NewDesc(Namespace+"_catalyst_environments",
		"Catalyst Environments by status.phase (none yet: Pending) and spec.type.",
		[]string{"phase", "type"}, nil)
)

var (
	conditionStatuses = []string{string(metav1.ConditionTrue), string(metav1.ConditionFalse), string(metav1.ConditionUnknown)}
	phases            = []string{string(catalystv1.PhasePending), string(catalystv1.PhaseBuilding), string(catalystv1.PhaseDeploying),
		string(catalystv1.PhaseReady), string(catalystv1.PhaseFailed)}
	environmentTypes = []string{string(catalystv1.EnvironmentDevelopment), string(catalystv1.EnvironmentDeployment)}
)

// Collector computes the per-object gauges from the objects of its kinds at each scrape: it lists each
// kind from its reader (the manager's cache: no request to the API server) and counts. It reports only
// once elected is closed (the manager's Elected()): before that the controllers' informers may not exist,
// and a standby replica reports nothing, so that sum() over replicas does not count objects twice.
type Collector struct {
	reader  Reader
	elected <-chan struct{}
	kinds   []*Kind
	now     func() time.Time
}

// NewCollector is the collector of kinds, reading from reader once elected is closed (nil: at once).
func NewCollector(reader Reader, elected <-chan struct{}, kinds ...*Kind) *Collector {
	return &Collector{reader: reader, elected: elected, kinds: kinds, now: time.Now}
}

// Describe sends every gauge's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{objectsDesc, notReadyDesc, cleanupsBlockedDesc, dependencyWaitsDesc, domainCertificatesDesc,
		environmentsDesc} {
		ch <- d
	}
}

// Collect lists each kind and sends its gauges. A kind that cannot be listed (a cache that does not sync
// in listTimeout) is left out of this scrape and logged; the other kinds are still reported.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.elected != nil {
		select {
		case <-c.elected:
		default:
			return
		}
	}
	now := c.now()
	for _, k := range c.kinds {
		if err := c.collectKind(k, now, ch); err != nil {
			ctrl.Log.WithName("metrics").Error(err, "list for metrics", "kind", k.Name)
		}
	}
}

// objectCounts are one kind's counts in one scrape.
type objectCounts struct {
	byState map[[2]string]int
	reasons []string
	oldest  time.Duration
	blocked int
	waits   map[string]int
	certs   map[string]int
	envs    map[[2]string]int
}

func (c *Collector) collectKind(k *Kind, now time.Time, ch chan<- prometheus.Metric) error {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	list := k.newList()
	// Read only: the cache's objects are counted, never changed, so they need not be copied.
	if err := c.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	n := objectCounts{byState: map[[2]string]int{}, waits: map[string]int{}, certs: map[string]int{}, envs: map[[2]string]int{}}
	err := meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return nil
		}
		n.add(k, obj, now)
		return nil
	})
	if err != nil {
		return err
	}
	n.send(k, ch)
	return nil
}

// add counts one object.
func (n *objectCounts) add(k *Kind, obj client.Object, now time.Time) {
	st := k.status(obj)
	k.ready.observe(k.Name, obj, st, now)

	ready, reason := string(metav1.ConditionUnknown), ReasonNoCondition
	since := obj.GetCreationTimestamp().Time
	c := meta.FindStatusCondition(st.Conditions, conditionReady)
	if c != nil {
		ready, reason = string(c.Status), c.Reason
		if !slices.Contains(conditionStatuses, ready) {
			ready = string(metav1.ConditionUnknown)
		}
		if !c.LastTransitionTime.IsZero() {
			since = c.LastTransitionTime.Time
		}
	}
	reason = n.boundReason(reason)
	n.byState[[2]string{ready, reason}]++
	if ready != string(metav1.ConditionTrue) && !since.IsZero() {
		n.oldest = max(n.oldest, now.Sub(since))
	}

	if cl := k.cleanup; cl != nil && !obj.GetDeletionTimestamp().IsZero() && len(obj.GetFinalizers()) > 0 {
		if cc := meta.FindStatusCondition(st.Conditions, cl.Condition); cc != nil && cc.Status != metav1.ConditionTrue &&
			!slices.Contains(cl.Waiting, cc.Reason) {
			n.blocked++
		}
	}
	for _, w := range k.waits {
		if wc := meta.FindStatusCondition(st.Conditions, w.Condition); wc != nil && wc.Status != metav1.ConditionTrue &&
			slices.Contains(w.Reasons, wc.Reason) {
			n.waits[w.Dependency]++
		}
	}
	switch o := obj.(type) {
	case *homelabv1.Domain:
		cert := string(metav1.ConditionUnknown)
		if cc := meta.FindStatusCondition(st.Conditions, homelabv1.ConditionCertificate); cc != nil && slices.Contains(conditionStatuses, string(cc.Status)) {
			cert = string(cc.Status)
		}
		n.certs[cert]++
	case *catalystv1.Environment:
		phase := string(o.Status.Phase)
		if phase == "" {
			phase = string(catalystv1.PhasePending)
		} else if !slices.Contains(phases, phase) {
			phase = string(metav1.ConditionUnknown)
		}
		typ := string(o.Spec.Type)
		if typ == "" {
			typ = string(catalystv1.EnvironmentDevelopment)
		} else if !slices.Contains(environmentTypes, typ) {
			typ = string(metav1.ConditionUnknown)
		}
		n.envs[[2]string{phase, typ}]++
	}
}

// boundReason is reason, or Other when it does not look like a reason or the kind has maxReasons others
// already in this scrape.
func (n *objectCounts) boundReason(reason string) string {
	if !reasonPattern.MatchString(reason) {
		return ReasonOther
	}
	if slices.Contains(n.reasons, reason) {
		return reason
	}
	if len(n.reasons) >= maxReasons {
		return ReasonOther
	}
	n.reasons = append(n.reasons, reason)
	return reason
}

// send emits one kind's gauges. Every kind has its no-condition series and its not-ready age, zero or
// not, and the kind-specific gauges have every known label value: each metric is on /metrics from the
// first scrape, whatever the cluster holds.
func (n *objectCounts) send(k *Kind, ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	noCondition := [2]string{string(metav1.ConditionUnknown), ReasonNoCondition}
	if _, ok := n.byState[noCondition]; !ok {
		n.byState[noCondition] = 0
	}
	for state, v := range n.byState {
		gauge(objectsDesc, v, k.Name, state[0], state[1])
	}
	ch <- prometheus.MustNewConstMetric(notReadyDesc, prometheus.GaugeValue, n.oldest.Seconds(), k.Name)
	if k.cleanup != nil {
		gauge(cleanupsBlockedDesc, n.blocked, k.Name)
	}
	for _, w := range k.waits {
		gauge(dependencyWaitsDesc, n.waits[w.Dependency], k.Name, w.Dependency)
	}
	switch k {
	case Domain:
		for _, s := range conditionStatuses {
			gauge(domainCertificatesDesc, n.certs[s], s)
		}
	case Environment:
		for _, p := range phases {
			for _, t := range environmentTypes {
				gauge(environmentsDesc, n.envs[[2]string{p, t}], p, t)
			}
		}
		for state, v := range n.envs {
			if !slices.Contains(phases, state[0]) || !slices.Contains(environmentTypes, state[1]) {
				gauge(environmentsDesc, v, state[0], state[1])
			}
		}
	}
}
