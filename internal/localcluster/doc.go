// Package localcluster is the local control plane that e2e tests, `make demo` and `make bench` share:
// etcd and kube-apiserver built from pinned modules into bin/k8s/<version>, started through envtest on
// 127.0.0.1 with the project's CRDs and the external ones (cert-manager, OpenShift Route) installed, an
// admin kubeconfig on disk, and Components as the place where the controllers a real cluster runs
// (kube-controller-manager, kube-scheduler, kwok) plug in.
package localcluster
