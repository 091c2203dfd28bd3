package localcluster

import "slices"

// WithWorkloads returns o with the components that make the cluster run workloads the way a real one
// does, appended after o's own: KubeControllerManager (Deployments, ReplicaSets, garbage collection,
// namespaces, ServiceAccounts, volume binding with a default StorageClass), KubeScheduler and Kwok (one
// fake node that runs whatever is scheduled onto it). It also turns ServiceAccount admission on.
//
// Each call makes new components: a component belongs to one cluster.
func WithWorkloads(o Options) Options {
	o.ServiceAccountAdmission = true
	o.Components = append(slices.Clone(o.Components), &KubeControllerManager{}, &KubeScheduler{}, &Kwok{})
	return o
}

// Full is WithWorkloads of the zero Options: the cluster `make demo` and the e2e suite run.
func Full() Options { return WithWorkloads(Options{}) }
