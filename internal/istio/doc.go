// Package istio holds the few networking.istio.io/v1 types the operator writes (Gateway, VirtualService),
// with only the fields it sets. They are registered in the operator's scheme so that the apply path,
// the cache and watches treat them like any typed kind; istio.io/client-go is not used because it pins a
// newer Kubernetes client than the operator's.
// +kubebuilder:object:generate=true
// +groupName=networking.istio.io
package istio
