// Package e2e holds the end-to-end suite: the operator as its built binary (bin/platform-operator, what
// the Dockerfile builds) against internal/testutil/localcluster's full cluster, where kube-controller-manager,
// kube-scheduler and kwok make Deployments Available and the garbage collector delete children for
// real. docs/e2e.md lists what each scenario proves and how to run one.
package e2e
