// Package istio holds the few networking.istio.io/v1 types the operator writes (Gateway, VirtualService),
// with only the fields it sets. They are registered in the operator's scheme so that the apply path,
// the cache and watches treat them like any typed kind; istio.io/client-go is not used because it pins a
// newer Kubernetes client than the operator's. The package has no +groupName marker on purpose: Istio's
// own CRDs (config/crd/external) serve these kinds, so `make manifests` must not generate CRDs from them
// (+kubebuilder:skip).
// zz_generated.deepcopy.go is controller-gen's output for this package:
//
//	bin/controller-gen-v0.19.0 object:headerFile=hack/boilerplate.go.txt paths=./internal/kit/istio/...
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
package istio
