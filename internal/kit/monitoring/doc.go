// Package monitoring holds the one monitoring.coreos.com/v1 type the operator writes (PodMonitor, for a
// SojuBouncer's metrics), with only the fields it sets. It is registered in the operator's scheme so that
// the apply path, the cache and watches treat it like any typed kind. The prometheus-operator module is
// not used: it needs a newer Kubernetes stack than the operator's (docs/development.md, "Library choices",
// has the measurement). The package has no +groupName marker on purpose:
// the Prometheus Operator's own CRD serves the kind, so `make manifests` must not generate a CRD from it
// (+kubebuilder:skip). zz_generated.deepcopy.go is controller-gen's output for this package:
//
//	bin/controller-gen-v0.19.0 object:headerFile=hack/boilerplate.go.txt paths=./internal/kit/monitoring/...
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
package monitoring
