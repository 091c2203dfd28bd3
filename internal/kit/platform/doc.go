// Package platform discovers, once at start-up, what the cluster offers the operator: the cert-manager,
// OpenShift Route, Istio and Prometheus Operator (PodMonitor) APIs, whether it is OpenShift at all, and
// whether the operator's own backup API is installed.
package platform
