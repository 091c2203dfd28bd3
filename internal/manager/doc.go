// Package manager is the one place the operator's controller-runtime manager is built, for main.go and
// every envtest suite alike: the scheme, the field owner and labels every child carries, the leader
// election ID, and the informer cache merged from what each API group contributes.
package manager
