// Package v1alpha1 holds the catalyst.catalyst.dev/v1alpha1 API: Projects and their preview and production
// Environments, each a locked-down namespace with quota, network policy and ingress.
// +kubebuilder:object:generate=true
// +groupName=catalyst.catalyst.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "catalyst.catalyst.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
