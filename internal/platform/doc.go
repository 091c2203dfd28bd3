// Package platform discovers, once at start-up, what the cluster offers the operator: the cert-manager and
// OpenShift Route APIs, and whether it is OpenShift at all.
package platform
