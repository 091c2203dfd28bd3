// Package v1alpha1 holds the iot.nationtech.io/v1alpha1 API: Deployment, containers on a fleet of devices
// selected by label, delivered through NATS JetStream to an agent on each device.
// +kubebuilder:object:generate=true
// +groupName=iot.nationtech.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "iot.nationtech.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
