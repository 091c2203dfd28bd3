// Package olm is the OLM install and upgrade end-to-end test (`make test-olm`). On the local cluster
// (internal/localcluster with kube-controller-manager, kube-scheduler and kwok) it runs OLM's `olm` and
// `catalog` operators as local processes (bin/olm-<version>, built by `make olm` from hack/tools/olm), serves
// a file-based catalog rendered from bundle/ with `opm serve` on 127.0.0.1, and installs platform-operator
// with an OperatorGroup and a Subscription. Once the CSV has Succeeded it runs bin/platform-operator as the
// CSV's Deployment would (its args and env, authenticated as the CSV's ServiceAccount), creates an
// ErgoNetwork and waits for it to be Ready. It then publishes a second bundle version that replaces the first,
// waits for OLM to upgrade, restarts the operator as the new Deployment and checks the network kept its claim,
// stayed Ready and its ergo pod was not restarted.
//
// The suite skips unless PLATFORM_OPERATOR_OLM_E2E=1 (the Makefile target sets it), so `go test ./...`
// does not need OLM's binaries.
package olm
