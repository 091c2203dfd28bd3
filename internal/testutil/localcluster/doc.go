// Package localcluster is the local cluster that e2e tests, `make demo` and `make bench` share: etcd and
// kube-apiserver built from pinned modules into bin/k8s/<version>, started through envtest on 127.0.0.1
// with the project's CRDs and the external ones (cert-manager, OpenShift Route) installed and an admin
// kubeconfig on disk; and Components for the controllers a real cluster runs. WithWorkloads (Full) adds
// kube-controller-manager, kube-scheduler and kwok with one fake node, so Deployments become Available,
// claims bind and the garbage collector deletes dependents. StartOperator runs the platform-operator
// binary against it the one way the e2e and OLM suites, the bench and the demo share (free loopback
// ports, a filtered environment, a log file, /readyz), and Metrics reads what its /metrics says.
//
// Every process runs in its own process group with its state under the cluster's temporary directory,
// and on Linux gets SIGKILL from the kernel should the process that started it die without calling Stop;
// CheckStopped proves afterwards that nothing was left behind.
package localcluster
