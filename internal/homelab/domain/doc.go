// Package domain builds the children of a homelab Domain: the cert-manager Certificate for hostname and
// *.hostname and the Istio Gateway serving it, both in the operator's gateway namespace, labelled with the
// Domain they belong to since owner references cannot cross namespaces.
package domain
