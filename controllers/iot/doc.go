// Package iot holds the reconciler of the iot.nationtech.io API group: Deployment, which publishes each
// selected device's desired state to NATS JetStream and folds the fleet's per-phase counters into status.
package iot
