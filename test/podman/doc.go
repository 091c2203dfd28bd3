// Package podman is the fleet agent's end-to-end test with a real podman: the agent (in-process) runs
// an iot deployment's containers from images imported locally, upgrades them, repairs drift made behind
// its back, removes them, and serves their logs and its events over a real NATS server (docs/iot.md,
// "The agent"). `make podman` installs podman and runc; `make test-podman` runs this package alone.
package podman
