// Package labels holds the names every child the operator makes carries: the recommended labels, the
// operator's annotation domain and the server-side-apply field owner. It is a leaf (it imports only
// apimachinery's label selectors), so builders can use it without pulling in the manager.
package labels

import (
	k8slabels "k8s.io/apimachinery/pkg/labels"
)

const (
	// OperatorName names the operator: its field owner, and the value of the managed-by and part-of
	// labels on everything it makes.
	OperatorName = "platform-operator"
	// FieldOwner is the server-side-apply field manager of every child the operator applies.
	FieldOwner = OperatorName
	// AnnotationDomain prefixes every annotation the operator itself writes
	// (platform-operator.josie.cloud/applied-digest, .../config-digest).
	AnnotationDomain = "platform-operator.josie.cloud"

	// ManagedByLabel marks every child the operator makes; the cache holds only objects carrying it
	// unless a group asks for more (manager.CacheRule.Scope).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// PartOfLabel says which product a child belongs to.
	PartOfLabel = "app.kubernetes.io/part-of"
	// InstanceLabel names the custom resource a child belongs to.
	InstanceLabel = "app.kubernetes.io/instance"
	// NameLabel names the application a child runs (ergo, soju, ...).
	NameLabel = "app.kubernetes.io/name"
)

// Annotation is the operator's annotation key for name: AnnotationDomain + "/" + name.
func Annotation(name string) string { return AnnotationDomain + "/" + name }

// Labels are the recommended labels every child carries: app (the application it runs), instance (the
// custom resource it belongs to), and the operator's managed-by and part-of.
func Labels(app, instance string) map[string]string {
	l := SelectorLabels(app, instance)
	l[ManagedByLabel] = OperatorName
	l[PartOfLabel] = OperatorName
	return l
}

// SelectorLabels is the part of Labels that never changes for one instance, so it can sit in a
// Deployment's immutable selector and a Service's selector.
func SelectorLabels(app, instance string) map[string]string {
	return map[string]string{NameLabel: app, InstanceLabel: instance}
}

// IsManaged says whether an object carries the operator's managed-by label.
func IsManaged(l map[string]string) bool { return l[ManagedByLabel] == OperatorName }

// ManagedSelector selects the objects the operator made.
func ManagedSelector() k8slabels.Selector {
	return k8slabels.SelectorFromSet(k8slabels.Set{ManagedByLabel: OperatorName})
}
