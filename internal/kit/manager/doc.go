// Package manager is the one place the operator's controller-runtime manager is built, for main.go and
// every envtest suite alike: the scheme, the leader election ID, and the informer cache merged from what
// each API group contributes, every cached object compacted on its way in (apply.CompactTransform). A group is a
// table of rows whose type says what each is (NewGroup of Reconciler, Webhook, Index and SharedCache rows),
// which each controllers/<group>/group.go builds from its Options; every reconciler's builder takes
// ControllerOptions (its workers and the manager's retry back-off). The labels and field owner every child carries
// are in internal/kit/labels, which builders import without this package.
package manager
