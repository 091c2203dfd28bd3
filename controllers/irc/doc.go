// Package irc holds the reconcilers of the irc.josie.cloud group: ErgoNetwork (an IRC network: its
// ircd.yaml, Deployment, Service, PVC, Certificate and Route) and SojuBouncer (a tenant's bouncer: its
// PostgreSQL database, config, Deployment and Service, and its link to the network). Each reads its
// object, applies its children in order through the kit (internal/kit/reconcile) and writes what it found
// to the object's status; group.go lists them for the manager.
package irc
