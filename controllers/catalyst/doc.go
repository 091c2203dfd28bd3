// Package catalyst holds the reconcilers of the catalyst.catalyst.dev API. The Project reconciler checks a
// Project and counts its Environments. An Environment is reconciled by one reconcile in three phases,
// through one work queue: its own steps (a locked-down namespace of its own with quota, limits, network
// policy, the tenant's ServiceAccount and RoleBinding, an https Ingress and Certificate; deletion and
// expiry), the build phase (buildPhase: a Kaniko Job per commit, unless the image is already in the
// registry) and the deploy phase (deployPhase: Helm, kustomize or plain manifests from Git, applied as the
// tenant, pruned by inventory). Each phase sets only its part of the status (environment_status_parts.go),
// which is written once per reconcile.
// The Environment admission webhook refuses a Project it may not use and two Environments one namespace
// or host.
package catalyst
