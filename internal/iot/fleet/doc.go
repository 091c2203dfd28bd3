// Package fleet is the IoT fleet's wire contract and its pure model: the NATS JetStream key-value
// buckets and keys, the records the operator and the agents exchange, the per-phase counters that fold
// device state transitions into a Deployment's status, and the choice of how many devices a rollout
// gives the current score. Nothing here talks to NATS or Kubernetes; internal/iot/fleet/store does the NATS
// side.
package fleet
