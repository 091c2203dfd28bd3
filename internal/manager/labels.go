package manager

import (
	"k8s.io/apimachinery/pkg/labels"

	oplabels "github.com/platform-operator/platform-operator/internal/labels"
)

// LeaderElectionID is the name of the leader election Lease.
const LeaderElectionID = "platform-operator.josie.cloud"

// The names below moved to internal/labels (a leaf builders import without the manager); these aliases
// keep the manager's callers building until they import it directly.
const (
	// OperatorName is labels.OperatorName.
	OperatorName = oplabels.OperatorName
	// FieldOwner is labels.FieldOwner.
	FieldOwner = oplabels.FieldOwner
	// AnnotationDomain is labels.AnnotationDomain.
	AnnotationDomain = oplabels.AnnotationDomain
	// ManagedByLabel is labels.ManagedByLabel.
	ManagedByLabel = oplabels.ManagedByLabel
	// PartOfLabel is labels.PartOfLabel.
	PartOfLabel = oplabels.PartOfLabel
	// InstanceLabel is labels.InstanceLabel.
	InstanceLabel = oplabels.InstanceLabel
	// NameLabel is labels.NameLabel.
	NameLabel = oplabels.NameLabel
)

// Annotation is labels.Annotation.
func Annotation(name string) string { return oplabels.Annotation(name) }

// Labels is labels.Labels.
func Labels(app, instance string) map[string]string { return oplabels.Labels(app, instance) }

// SelectorLabels is labels.SelectorLabels.
func SelectorLabels(app, instance string) map[string]string {
	return oplabels.SelectorLabels(app, instance)
}

// IsManaged is labels.IsManaged.
func IsManaged(l map[string]string) bool { return oplabels.IsManaged(l) }

// ManagedSelector is labels.ManagedSelector.
func ManagedSelector() labels.Selector { return oplabels.ManagedSelector() }
