package manager

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// Scope says which objects of one kind the cache holds for a group.
type Scope int

const (
	// Managed caches only the objects carrying the operator's managed-by label: the children the
	// operator made. A cluster full of unrelated objects of the kind then costs no memory.
	Managed Scope = iota
	// All caches every object of the kind in the watched namespaces: for a group that reads objects it
	// did not label (Namespaces it found by name, users' own objects). It costs memory per object in the
	// cluster, so a rule asking for it says why (CacheRule.Why).
	All
)

func (s Scope) String() string {
	if s == All {
		return "All"
	}
	return "Managed"
}

// CacheRule is one group's need for one kind in the manager's cache.
type CacheRule struct {
	// Object is the kind, as an empty typed object (&corev1.ConfigMap{}).
	Object client.Object
	// Scope is which objects of the kind the group reads.
	Scope Scope
	// Why says, for Scope All, what the group reads that it did not label; New refuses a rule with
	// Scope All and no reason.
	Why string
	// Transform cuts each object down before the cache stores it (e.g. Secrets to their identity, or a
	// group's children to their metadata and status with apply.Slim). It drops what another group might
	// read, so it is opt-in and scoped: with TransformSelector it applies only to the objects that
	// selector matches (a group's own children, by their app.kubernetes.io/name label), and several
	// groups may then transform one kind, each its own objects; without it, it applies to every object
	// of the kind and no other group may transform that kind. Objects no transform claims are cached with
	// only their managed fields stripped.
	Transform toolscache.TransformFunc
	// TransformSelector limits Transform to the objects whose labels it matches; nil means all.
	TransformSelector labels.Selector
	// Unlisted says the group never lists the kind by namespace from the cache (it only gets objects by
	// name): the kind's informers then keep no namespace index. client-go's index holds a set of keys per
	// namespace, a map each, which for children spread one per namespace (an Environment's) is the
	// largest part of what the cache spends on them. A List by namespace of such a kind fails ("Index
	// with name namespace does not exist"), it never answers empty. A kind is unlisted only when every
	// group's rule for it says so.
	Unlisted bool
}

// Group is what one API group contributes to the manager.
type Group struct {
	// Name names the group in errors and logs ("irc").
	Name string
	// Rows describe the group's table, one line per row ("reconciler ErgoNetwork", "webhook Domain",
	// "index Environment catalyst.project", "cache irc children"): NewGroup fills it.
	Rows []string
	// Cache lists the kinds the group's controllers read besides their own custom resources, given the
	// APIs this cluster serves. Kinds no group lists are cached whole.
	Cache func(platform.Capabilities) []CacheRule
	// Setup registers the group's controllers and webhooks with the manager.
	Setup func(ctrl.Manager, platform.Capabilities) error
}

// Options are controller-runtime's manager options and what the kit adds to them.
type Options struct {
	ctrl.Options
	// Retry is the per-object back-off of every controller the groups set up with ControllerOptions;
	// the zero Retry is controller-runtime's default (DefaultRetry).
	Retry Retry
}

// New builds the manager every binary and test suite runs: scheme.Scheme unless opts has a scheme,
// LeaderElectionID unless opts names one, managed fields stripped from every cached object, and the cache
// rules of every group merged into opts.Cache.ByObject (which the caller leaves empty). It then calls each
// group's Setup with the manager it returns, whose controllers take opts.Retry (ControllerOptions) and
// opts.Controller (controller-runtime's: ReconciliationTimeout among them). cfg's ContentType stays empty
// (controller-runtime speaks protobuf for built-in kinds, JSON for custom resources), and the events of
// opts.EventBroadcaster, when set, go as protobuf (protobuf.go).
func New(cfg *rest.Config, kitOpts Options, caps platform.Capabilities, groups ...Group) (ctrl.Manager, error) {
	opts := kitOpts.Options
	if err := kitOpts.Retry.validate(); err != nil {
		return nil, err
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.LeaderElectionID == "" {
		opts.LeaderElectionID = LeaderElectionID
	}
	if opts.Cache.DefaultTransform == nil {
		opts.Cache.DefaultTransform = apply.CompactTransform()
	}
	if opts.Cache.ByObject != nil {
		return nil, errors.New("manager: Cache.ByObject comes from the groups' cache rules; leave it empty")
	}
	byObject, unlisted, err := mergeCacheRules(opts.Scheme, cacheRules(caps, groups))
	if err != nil {
		return nil, err
	}
	opts.Cache.ByObject = byObject
	if len(unlisted) > 0 && opts.Cache.NewInformer == nil {
		opts.Cache.NewInformer = informerIndexing(opts.Scheme, unlisted)
	}
	if cfg.ContentType != "" {
		return nil, errContentType
	}
	var events *protobufEvents
	if b := opts.EventBroadcaster; b != nil {
		events = &protobufEvents{EventBroadcaster: b, cfg: cfg}
		opts.EventBroadcaster = events
	}

	crMgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if events != nil {
		events.httpClient = crMgr.GetHTTPClient()
	}
	mgr := &kitManager{Manager: crMgr, retry: kitOpts.Retry}
	for _, g := range groups {
		if g.Setup == nil {
			continue
		}
		if err := g.Setup(mgr, caps); err != nil {
			return nil, fmt.Errorf("set up group %s: %w", g.Name, err)
		}
	}
	return mgr, nil
}

type namedRule struct {
	group string
	CacheRule
}

// cacheRules is every group's cache rules for this cluster, each with its group's name.
func cacheRules(caps platform.Capabilities, groups []Group) []namedRule {
	var rules []namedRule
	for _, g := range groups {
		if g.Cache == nil {
			continue
		}
		for _, r := range g.Cache(caps) {
			rules = append(rules, namedRule{group: g.Name, CacheRule: r})
		}
	}
	return rules
}

// mergeCacheRules turns the groups' rules into the cache's ByObject: per kind, the widest scope any
// group asks for (one group's All must not be narrowed by another's Managed, or it would silently see
// nothing), and the transforms (one for the whole kind, or one per selector).
func mergeCacheRules(s *runtime.Scheme, rules []namedRule) (map[client.Object]cache.ByObject, map[schema.GroupVersionKind]bool, error) {
	type merged struct {
		obj      client.Object
		scope    Scope
		whole    *namedRule // the rule transforming every object of the kind
		selected []namedRule
		listed   bool // some group lists the kind by namespace
	}
	byGVK := map[schema.GroupVersionKind]*merged{}
	var errs []error
	for _, r := range rules {
		if r.Object == nil {
			errs = append(errs, fmt.Errorf("group %s: a cache rule has no object", r.group))
			continue
		}
		gvk, err := apiutil.GVKForObject(r.Object, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("group %s: %w", r.group, err))
			continue
		}
		if r.Scope == All && strings.TrimSpace(r.Why) == "" {
			errs = append(errs, fmt.Errorf("group %s: caching every %s needs a reason (CacheRule.Why)", r.group, gvk.Kind))
			continue
		}
		if r.TransformSelector != nil && r.Transform == nil {
			errs = append(errs, fmt.Errorf("group %s: a %s rule has a TransformSelector and no Transform", r.group, gvk.Kind))
			continue
		}
		m := byGVK[gvk]
		if m == nil {
			m = &merged{obj: r.Object}
			byGVK[gvk] = m
		}
		m.scope = max(m.scope, r.Scope)
		m.listed = m.listed || !r.Unlisted
		if r.Transform == nil {
			continue
		}
		switch {
		case m.whole != nil:
			errs = append(errs, fmt.Errorf("groups %s and %s both transform cached %s objects; only one may", m.whole.group, r.group, gvk.Kind))
			continue
		case r.TransformSelector == nil && len(m.selected) > 0:
			errs = append(errs, fmt.Errorf("groups %s and %s both transform cached %s objects; only one may", m.selected[0].group, r.group, gvk.Kind))
			continue
		case r.TransformSelector == nil:
			m.whole = &r
		default:
			m.selected = append(m.selected, r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	out := make(map[client.Object]cache.ByObject, len(byGVK))
	unlisted := map[schema.GroupVersionKind]bool{}
	for gvk, m := range byGVK {
		if !m.listed {
			unlisted[gvk] = true
		}
		var b cache.ByObject
		if m.scope == Managed {
			b.Label = oplabels.ManagedSelector()
		}
		switch {
		case m.whole != nil:
			b.Transform = m.whole.Transform
		case len(m.selected) > 0:
			b.Transform = selectedTransform(m.selected)
		}
		out[m.obj] = b
	}
	return out, unlisted, nil
}

// informerIndexing is the cache's informer constructor: client-go's, without the namespace index for the
// unlisted kinds (CacheRule.Unlisted), typed or metadata-only alike.
func informerIndexing(s *runtime.Scheme, unlisted map[schema.GroupVersionKind]bool) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if gvk, err := apiutil.GVKForObject(obj, s); err == nil && unlisted[gvk] {
			kept := toolscache.Indexers{}
			for name, f := range indexers {
				if name != toolscache.NamespaceIndex {
					kept[name] = f
				}
			}
			indexers = kept
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
}

// selectedTransform applies the first rule whose selector matches an object's labels, and to objects no
// rule selects what the cache does by default (apply.CompactTransform): ByObject's transform replaces the
// default one.
func selectedTransform(rules []namedRule) toolscache.TransformFunc {
	strip := apply.CompactTransform()
	return func(in any) (any, error) {
		if obj, ok := in.(client.Object); ok {
			l := labels.Set(obj.GetLabels())
			for _, r := range rules {
				if r.TransformSelector.Matches(l) {
					return r.Transform(in)
				}
			}
		}
		return strip(in)
	}
}

// Describe lists the merged cache rules, one line per kind ("ConfigMap: Managed (irc)"), for logs and
// tests.
func Describe(s *runtime.Scheme, caps platform.Capabilities, groups ...Group) ([]string, error) {
	byObject, unlisted, err := mergeCacheRules(s, cacheRules(caps, groups))
	if err != nil {
		return nil, err
	}
	var lines []string
	for obj, b := range byObject {
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			return nil, err
		}
		scope := All
		if b.Label != nil {
			scope = Managed
		}
		line := fmt.Sprintf("%s: %s", gvk.Kind, scope)
		if b.Transform != nil {
			line += ", transformed"
		}
		if unlisted[gvk] {
			line += ", unlisted"
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return lines, nil
}
