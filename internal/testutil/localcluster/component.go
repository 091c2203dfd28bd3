package localcluster

import "context"

// Component is a process that runs against the control plane, such as kube-controller-manager (garbage
// collection, Deployments), kube-scheduler or kwok (fake nodes and pods). It is the extension point for
// the controllers a real cluster runs: envtest alone has none of them, so Deployments never become
// Available and nothing is garbage collected.
//
// Start launches components in Options.Components order once the CRDs are served; Stop stops them in
// reverse order before kube-apiserver and etcd. A component finds what it needs on the Cluster:
// BinaryPath for its executable, KubeconfigPath, APIServerCertDir for the service-account key, Dir for
// its own state.
type Component interface {
	// Name names the component in progress reports and errors, such as "kube-controller-manager".
	Name() string
	// Start launches the component and returns once it is ready. ctx ends when Start is abandoned.
	Start(ctx context.Context, c *Cluster) error
	// Stop stops the component and waits for its processes to exit. It is called once, also after a
	// Start that failed, so it must cope with a component that is only partly started.
	Stop() error
}
