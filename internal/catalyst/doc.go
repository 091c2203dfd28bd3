// Package catalyst builds, as pure functions, what the operator makes for a catalyst Environment: the
// namespace name and its labels, the Namespace, and inside it the ResourceQuota, LimitRange,
// NetworkPolicy, cert-manager Certificate and Ingress.
package catalyst
