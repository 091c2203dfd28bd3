// Package ircnet holds the builders an ErgoNetwork and a SojuBouncer share: listener ports, the
// single-process Deployment and its pod, and the Service, cert-manager Certificate and OpenShift Route in
// front of an IRC server. They are pure functions of the shared API sub-types (Listener, TLSSpec,
// RouteSpec) and of Meta, the identity each kind's package gives its children.
package ircnet
