// Package platform discovers, once at start-up, what the cluster offers the operator: the cert-manager,
// OpenShift Route, Istio and Prometheus Operator (PodMonitor) APIs, and whether it is OpenShift at all.
package platform
