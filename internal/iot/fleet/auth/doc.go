// Package auth is the fleet's identity and permission model, enforced by nats-server itself with NATS's
// decentralized JWTs: an operator, a fleet account whose scoped signing keys carry the permissions of
// each role (device, operator, viewer) as templates on the user's name, and the credentials issued to
// each device and person. cmd/fleet-auth is its command line; docs/fleet.md ("Identity and permissions")
// is the administrator's guide.
package auth
