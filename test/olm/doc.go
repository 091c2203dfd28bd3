// Package olm is the OLM install and upgrade end-to-end test (`make test-olm`). On the local cluster
// (internal/testutil/localcluster with kube-controller-manager, kube-scheduler and kwok) it runs OLM's `olm` and
// `catalog` operators as local processes (bin/olm-<version>, built by `make olm` from hack/tools/olm), serves
// a file-based catalog with `opm serve` on 127.0.0.1, and installs platform-operator with an OperatorGroup and
// a Subscription. The first install is the previous release (test/olm/previous-release): its own bundle and
// its own binary, built from its source by `make previous-release`. Once the CSV has Succeeded it runs that
// binary as the CSV's Deployment would (its args and env, authenticated as the CSV's ServiceAccount), creates
// an ErgoNetwork and waits for it to be Ready, and installs the iot CRD of before the plural change
// (iotdeployments) with two Deployments, which it exports before the upgrade, deleting that CRD, and
// re-creates after it under deployments.iot.nationtech.io (docs/iot.md). It then publishes the current bundle as the next version,
// waits for OLM to upgrade, restarts the operator as the new Deployment with bin/platform-operator and checks
// the network stayed Ready and kept its claim, its ergo pod and its Deployment as they were.
//
// The suite skips unless PLATFORM_OPERATOR_OLM_E2E=1 (the Makefile target sets it), so `go test ./...`
// does not need OLM's binaries.
package olm
