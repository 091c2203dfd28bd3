package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// The Catalyst workload: pull-request Environments of one Project, each converging to a namespace of its
// own, locked down with a ResourceQuota, a LimitRange and a NetworkPolicy, and an Ingress.

func init() { register(catalystWorkload{}) }

type catalystWorkload struct{}

// The bench's Project: team bench (so the Project lives in the bench namespace, the team's), project shop.
const (
	catalystTeam    = "bench"
	catalystProject = "shop"
)

// catalystChildren are the kinds of an Environment's children, in the order the operator makes them.
var catalystChildren = []string{"Namespace", "ResourceQuota", "LimitRange", "NetworkPolicy", "Ingress"}

// catalystDefaults are the operator's settings under the workload's OperatorArgs: the flags' defaults, but no
// cluster issuer.
var catalystDefaults = catalyst.Defaults{Domain: catalyst.DefaultDomain, IngressNamespace: catalyst.DefaultIngressNamespace}

func (catalystWorkload) Info() Info {
	return Info{
		Name: "catalyst", Kind: "Environment", Resource: "environments",
		Noun: "environment", Nouns: "environments",
		Controllers:  []string{"environment", "project"},
		Children:     catalystChildren,
		StatusWrites: 1,
		// No cert-manager runs here: without an issuer the Environment's Ingress serves plain http and
		// IngressReady needs no Certificate to be issued.
		// The Project names catalysttest's domain, which the administrator must allow.
		OperatorArgs: []string{"--catalyst-cluster-issuer=", "--catalyst-allowed-domains=preview.example.com"},
		Shape: fmt.Sprintf("An environment is catalysttest's pull-request Environment (the web application's labels, "+
			"a commit, a branch, one env var) of one Project, catalysttest's too (1 CPU / 2Gi quota) but with no "+
			"issuer and no build settings, so it has %d children: %s; the operator runs with "+
			"`--catalyst-cluster-issuer=` (there is no cert-manager: the Ingress serves plain http). The Project has no "+
			"`spec.build`, so no image is checked or built and nothing is deployed: *converged* is every child seen "+
			"(in the environment's own namespace) and `NamespaceReady` and `IngressReady` True for the current "+
			"generation (`Ready` also waits for a build). The Project exists "+
			"before the clock starts; the operator also writes its status (the count of its environments).",
			len(catalystChildren), strings.Join(catalystChildren, ", ")),
		EditDoes:    "`spec.source.branch` of one environment after another is merge-patched",
		EditWritten: "namespace labelled",
		EditStages: "*Namespace labelled* is the environment's Namespace carrying the new branch (its `catalyst.dev/branch` " +
			"annotation); *applied* is the Environment's status observing the edit's generation, both seen through a watch.",
	}
}

// Kinds are prototypes for discovery: the children are shown in the bench namespace, although the operator
// makes them in the environment's own.
func (w catalystWorkload) Kinds() []client.Object {
	env := w.environment(benchNamespace, 0)
	name := benchNamespace
	s := catalyst.SettingsFor(w.project(benchNamespace), catalystDefaults)
	return []client.Object{env, w.project(benchNamespace), catalyst.Namespace(env, catalyst.PartsOf(env), name),
		catalyst.ResourceQuota(env, name, s.Quota), catalyst.LimitRange(env, name, s.Quota),
		catalyst.NetworkPolicy(env, name, s.IngressNamespace, s.Egress), catalyst.Ingress(env, name, "h", s, false)}
}

func (catalystWorkload) ObjectName(i int) string { return fmt.Sprintf("env-%05d", i) }

// project is the bench's Project: catalysttest's, with no issuer (the defaults' none either).
func (catalystWorkload) project(namespace string) *catalystv1.Project {
	p := catalysttest.Project(namespace, catalystProject)
	p.Spec.Ingress.IssuerRef = nil
	return p
}

// environment is environment i: catalysttest's pull-request Environment of the bench's Project.
func (w catalystWorkload) environment(namespace string, i int) *catalystv1.Environment {
	return catalysttest.Environment(namespace, w.ObjectName(i), catalystTeam, catalystProject)
}

// Prepare creates the Project, with the first environment.
func (w catalystWorkload) Prepare(ctx context.Context, c client.Client, namespace string, i int) error {
	if i != 0 {
		return nil
	}
	return c.Create(ctx, w.project(namespace))
}

func (w catalystWorkload) Create(ctx context.Context, c client.Client, namespace string, i int) error {
	return c.Create(ctx, w.environment(namespace, i))
}

// Floor creates environment i with the operator's finalizer, its namespace and the four objects in it as
// the operator builds them, and its status.
func (w catalystWorkload) Floor(ctx context.Context, c client.Client, namespace string, i int) error {
	env := w.environment(namespace, i)
	env.Finalizers = []string{catalystv1.Finalizer}
	if err := c.Create(ctx, env); err != nil {
		return err
	}
	parts := catalyst.PartsOf(env)
	ns := parts.Namespace()
	s := catalyst.SettingsFor(w.project(namespace), catalystDefaults)
	host := catalyst.Host(ns, s.Domain)
	children := []client.Object{
		catalyst.Namespace(env, parts, ns),
		catalyst.ResourceQuota(env, ns, s.Quota),
		catalyst.LimitRange(env, ns, s.Quota),
		catalyst.NetworkPolicy(env, ns, s.IngressNamespace, s.Egress),
		catalyst.Ingress(env, ns, host, s, false),
	}
	for _, child := range children {
		if err := c.Create(ctx, child); err != nil {
			return fmt.Errorf("floor: create %T %s: %w", child, child.GetName(), err)
		}
	}
	now := metav1.Now()
	cond := func(t, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: "floor",
			LastTransitionTime: now, ObservedGeneration: env.Generation}
	}
	env.Status = catalystv1.EnvironmentStatus{
		Phase: catalystv1.PhaseDeploying, URL: catalyst.URL(host, false), Namespace: ns, ObservedGeneration: env.Generation,
		Conditions: []metav1.Condition{
			cond(catalystv1.ConditionNamespaceReady, catalystv1.ReasonApplied),
			cond(catalystv1.ConditionIngressReady, catalystv1.ReasonApplied),
		},
	}
	return c.Status().Update(ctx, env)
}

// branchMarker is the branch edit seq gives: the namespace whose branch annotation holds it has the edit.
func branchMarker(seq int) string { return fmt.Sprintf("churn/%06d", seq) }

// Edit merge-patches spec.source.branch, as kubectl patch would.
func (w catalystWorkload) Edit(ctx context.Context, c client.Client, namespace string, i, seq int) error {
	patch := fmt.Appendf(nil, `{"spec":{"source":{"branch":%q}}}`, branchMarker(seq))
	obj := &catalystv1.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: w.ObjectName(i)}}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

func (catalystWorkload) NewObserver() Observer {
	return &catalystObserver{envs: map[string]*catalystState{}}
}

// catalystObserver follows Environments through a watch of them, of the operator's namespaces and of
// the operator's objects in every namespace.
type catalystObserver struct {
	envs map[string]*catalystState
}

// Children an environment has, as bits of catalystState.kinds.
const (
	envNamespace uint8 = 1 << iota
	envQuota
	envLimitRange
	envNetworkPolicy
	envIngress
	envAllKinds = envNamespace | envQuota | envLimitRange | envNetworkPolicy | envIngress
)

type catalystState struct {
	kinds                uint8 // children seen
	generation, observed int64
	ready                bool   // NamespaceReady and IngressReady True for the observed generation
	branch               string // the namespace's branch annotation
	marker               string // the branch the edit under way sets
	observedBefore       int64  // the observed generation before it
}

func (o *catalystObserver) Watches() []Watch {
	managed := oplabels.ManagedSelector()
	return []Watch{
		{Object: &catalystv1.Environment{}},
		{Object: &corev1.Namespace{}, Selector: managed},
		{Object: &corev1.ResourceQuota{}, Selector: managed, AllNamespaces: true},
		{Object: &corev1.LimitRange{}, Selector: managed, AllNamespaces: true},
		{Object: &networkingv1.NetworkPolicy{}, Selector: managed, AllNamespaces: true},
		{Object: &networkingv1.Ingress{}, Selector: managed, AllNamespaces: true},
	}
}

func (o *catalystObserver) Observe(obj client.Object) Progress {
	var s *catalystState
	name := obj.GetName()
	switch obj := obj.(type) {
	case *catalystv1.Environment:
		s = entry(o.envs, name)
		s.generation, s.observed = obj.Generation, obj.Status.ObservedGeneration
		s.ready = obj.Status.Namespace != "" &&
			meta.IsStatusConditionTrue(obj.Status.Conditions, catalystv1.ConditionNamespaceReady) &&
			meta.IsStatusConditionTrue(obj.Status.Conditions, catalystv1.ConditionIngressReady)
	default:
		// The children carry the environment's name; the bench's objects are all in one namespace, so
		// the name alone tells the environment.
		if obj.GetLabels()[oplabels.NameLabel] != catalyst.AppName || obj.GetLabels()[oplabels.InstanceLabel] == "" {
			return Progress{}
		}
		name = obj.GetLabels()[oplabels.InstanceLabel]
		s = entry(o.envs, name)
		switch obj := obj.(type) {
		case *corev1.Namespace:
			s.kinds |= envNamespace
			s.branch = obj.Annotations[catalystv1.AnnotationBranch]
		case *corev1.ResourceQuota:
			s.kinds |= envQuota
		case *corev1.LimitRange:
			s.kinds |= envLimitRange
		case *networkingv1.NetworkPolicy:
			s.kinds |= envNetworkPolicy
		case *networkingv1.Ingress:
			s.kinds |= envIngress
		default:
			return Progress{}
		}
	}
	written := s.marker != "" && s.branch == s.marker
	return Progress{
		Name:      name,
		Converged: s.kinds == envAllKinds && s.ready && s.generation > 0 && s.observed == s.generation,
		Written:   written,
		Applied:   written && s.observed > s.observedBefore && s.observed == s.generation,
	}
}

func (o *catalystObserver) StartEdit(name string, seq int) {
	s := entry(o.envs, name)
	s.marker, s.observedBefore = branchMarker(seq), s.observed
}
