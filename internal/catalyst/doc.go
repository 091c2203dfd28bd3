// Package catalyst builds what the operator makes for a catalyst Environment, as pure functions: the
// namespace name and its labels, the Namespace, and inside it the ResourceQuota, LimitRange,
// NetworkPolicies, tenant ServiceAccount and RoleBinding, cert-manager Certificate, Ingress and the Kaniko
// build Job (with the redaction of its log tail). One client part talks to the network: Registry.Head
// (registry.go) asks an image registry whether an image is there, with the Secret's credentials (Keychain).
// Rendering a commit (Helm, kustomize, manifests) is in render/, fetching it from Git in source/.
package catalyst
