// Package v1 holds the homelab.mortenolsen.pro/v1 API: PostgreSQL and Redis connections, databases made on
// demand, domains with certificates and gateways, and the Authentik identity provider that waits for them.
// +kubebuilder:object:generate=true
// +groupName=homelab.mortenolsen.pro
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "homelab.mortenolsen.pro", Version: "v1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
