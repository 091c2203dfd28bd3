// Package ergo builds every child object of an ErgoNetwork (ircd.yaml ConfigMap, data PVC, cert-manager
// Certificate, Deployment, Service, OpenShift Route) as pure functions of the custom resource, so the
// controller only decides when to apply them and tests can pin exactly what is applied.
package ergo
