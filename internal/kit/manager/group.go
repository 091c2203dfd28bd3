package manager

import (
	"context"
	"fmt"
	"reflect"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// Row is one row of a group's table (controllers/<group>/group.go). What a row is, is its type:
//   - Reconciler: a kind's controller, and what it reads from the cache besides its own custom resource;
//   - Webhook: the admission webhook of one kind;
//   - Index: a field index on one kind, which reconcilers and webhooks list by;
//   - SharedCache: cache rules several rows of the group read, stated once.
type Row interface {
	// describe is the row as Group.Rows lists it; cache and setup are what the row adds to the group's.
	describe() string
	cache(platform.Capabilities) []CacheRule
	setup(ctrl.Manager, platform.Capabilities) error
}

// Reconciler is a kind's controller.
type Reconciler struct {
	// Name is the kind it reconciles ("ErgoNetwork").
	Name string
	// Cache is what it reads from the cache besides its own custom resource; nil when nothing.
	Cache func(platform.Capabilities) []CacheRule
	// Setup builds the reconciler and registers it with the manager (its SetupWithManager).
	Setup func(ctrl.Manager, platform.Capabilities) error
}

func (r Reconciler) describe() string { return "reconciler " + r.Name }

func (r Reconciler) cache(caps platform.Capabilities) []CacheRule {
	if r.Cache == nil {
		return nil
	}
	return r.Cache(caps)
}

func (r Reconciler) setup(mgr ctrl.Manager, caps platform.Capabilities) error {
	if r.Setup == nil {
		return fmt.Errorf("reconciler %s has no Setup", r.Name)
	}
	return r.Setup(mgr, caps)
}

// Webhook is the validating admission webhook of one kind, served at the path controller-runtime derives
// from the kind (the one config/webhook and the CSV name).
type Webhook struct {
	// For is the kind it admits, as an empty typed object (&homelabv1.Domain{}).
	For client.Object
	// Validator is the webhook's validator, given the manager (for its cache and API reader).
	Validator func(ctrl.Manager) (admission.CustomValidator, error)
}

func (w Webhook) describe() string { return "webhook " + kindOf(w.For) }

func (Webhook) cache(platform.Capabilities) []CacheRule { return nil }

func (w Webhook) setup(mgr ctrl.Manager, _ platform.Capabilities) error {
	if w.For == nil || w.Validator == nil {
		return fmt.Errorf("webhook %s needs For and Validator", kindOf(w.For))
	}
	v, err := w.Validator(mgr)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", kindOf(w.For), err)
	}
	return ctrl.NewWebhookManagedBy(mgr).For(w.For).WithValidator(v).Complete()
}

// Index is a field index on one kind in the manager's cache: List with client.MatchingFields{Field: v}
// finds the objects for which Extract returns v.
type Index struct {
	// Object is the indexed kind, as an empty typed object.
	Object client.Object
	// Field names the index ("catalyst.project"); prefixed with the group's name, as two groups may index
	// one kind.
	Field string
	// Extract is the values an object is found by.
	Extract client.IndexerFunc
}

func (i Index) describe() string { return "index " + kindOf(i.Object) + " " + i.Field }

func (Index) cache(platform.Capabilities) []CacheRule { return nil }

func (i Index) setup(mgr ctrl.Manager, _ platform.Capabilities) error {
	if i.Object == nil || i.Field == "" || i.Extract == nil {
		return fmt.Errorf("index %q needs Object, Field and Extract", i.Field)
	}
	return mgr.GetFieldIndexer().IndexField(context.Background(), i.Object, i.Field, i.Extract)
}

// SharedCache is cache rules several rows of the group read (each kind may be transformed by one rule
// only, so a rule two rows need is stated once, here).
type SharedCache struct {
	// Name says whose rules they are ("irc children").
	Name string
	// Cache is the rules.
	Cache func(platform.Capabilities) []CacheRule
}

func (s SharedCache) describe() string { return "cache " + s.Name }

func (s SharedCache) cache(caps platform.Capabilities) []CacheRule {
	if s.Cache == nil {
		return nil
	}
	return s.Cache(caps)
}

func (SharedCache) setup(ctrl.Manager, platform.Capabilities) error { return nil }

// kindOf is the Go type name of an empty typed object ("Domain"), for naming a row.
func kindOf(obj client.Object) string {
	if obj == nil {
		return "<nil>"
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// NewGroup is the group named name made of a table of rows: its cache rules are the rows' together
// (merged as any groups' are, so two rows must not transform the same objects: put a rule two rows share
// in a SharedCache row), and its setup runs each row's in the table's order (an index before the rows
// that list by it reads best, though any order works: all run before the cache starts).
func NewGroup(name string, rows ...Row) Group {
	described := make([]string, 0, len(rows))
	for _, r := range rows {
		described = append(described, r.describe())
	}
	return Group{
		Name: name,
		Rows: described,
		Cache: func(caps platform.Capabilities) []CacheRule {
			var rules []CacheRule
			for _, r := range rows {
				rules = append(rules, r.cache(caps)...)
			}
			return rules
		},
		Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			for _, r := range rows {
				if err := r.setup(mgr, caps); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
