package ircnet

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Meta is what every child of one IRC server carries: its namespace, labels and controller reference,
// and the selector labels its pods are found by.
type Meta struct {
	// Namespace is the owner's namespace, and so every child's.
	Namespace string
	// Labels are the recommended labels on every child.
	Labels map[string]string
	// Selector is the subset of Labels that never changes, for the Service's and Deployment's selectors.
	Selector map[string]string
	// Owner makes the custom resource the children's controller.
	Owner metav1.OwnerReference
}

// Object is a child's metadata under name.
func (m Meta) Object(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       m.Namespace,
		Labels:          m.Labels,
		OwnerReferences: []metav1.OwnerReference{m.Owner},
	}
}
