package manager

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// Controller is one row of a group's table (controllers/<group>/group.go): a kind's reconciler, a
// webhook, or cache rules several rows share. Either function may be nil.
type Controller struct {
	// Name names the row for a reader of the table ("ErgoNetwork", "Domain webhook").
	Name string
	// Cache is what the row reads from the cache besides its own custom resource.
	Cache func(platform.Capabilities) []CacheRule
	// Setup registers the row's reconciler or webhook with the manager.
	Setup func(ctrl.Manager, platform.Capabilities) error
}

// NewGroup is the group named name made of a table of rows: its cache rules are the rows' together
// (merged as any groups' are, so two rows must not transform the same objects: put a rule two rows share
// in a row of its own), and its setup runs each row's in the table's order.
func NewGroup(name string, rows ...Controller) Group {
	return Group{
		Name: name,
		Cache: func(caps platform.Capabilities) []CacheRule {
			var rules []CacheRule
			for _, r := range rows {
				if r.Cache != nil {
					rules = append(rules, r.Cache(caps)...)
				}
			}
			return rules
		},
		Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			for _, r := range rows {
				if r.Setup == nil {
					continue
				}
				if err := r.Setup(mgr, caps); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
