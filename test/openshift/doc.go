// Package openshift checks config/openshift, the in-cluster build and OLM install for OpenShift, without an
// OpenShift cluster: every manifest is decoded strictly into the openshift/api and operator-framework types,
// rendered with kustomize for the default and another project, cross-checked (build outputs, image streams,
// the CatalogSource image, the Subscription's package and channel, the bundle and catalog the builds upload)
// and, for OLM's kinds, created on a real kube-apiserver serving OLM's CRDs. docs/openshift.md is checked
// against the same files and Makefile targets.
package openshift
