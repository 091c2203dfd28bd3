// Package catalyst holds the reconcilers of the catalyst.catalyst.dev API: Projects, and Environments,
// each a locked-down namespace of its own with quota, network policy and an https Ingress; and the
// Environment admission webhook that refuses two Environments one namespace or host.
package catalyst
