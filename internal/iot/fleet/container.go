package fleet

import (
	"crypto/sha256"
	"encoding/hex"
)

// ContainerName is the podman container of one service of a deployment on a device:
// iot-<namespace>-<name>-<service>-<hash>, where hash is DeploymentHash. The readable part alone is
// ambiguous (team-a/web and team/a-web both read iot-team-a-web-...), and container names are shared by
// every deployment on the device; the hash tells the deployments apart, so one namespace cannot name (and
// so replace or remove) another namespace's container.
func ContainerName(d DeploymentKey, service string) string {
	return "iot-" + d.Namespace + "-" + d.Name + "-" + service + "-" + DeploymentHash(d)
}

// DeploymentHash is a short stable hash of a deployment's namespace and name: the first 8 hexadecimal
// digits of the SHA-256 of "<namespace>/<name>" (a slash is in neither). It is part of the names of the
// containers on the devices, so it must never change between releases: a new hash would replace every
// container of the fleet.
func DeploymentHash(d DeploymentKey) string {
	sum := sha256.Sum256([]byte(d.Namespace + "/" + d.Name))
	return hex.EncodeToString(sum[:4])
}
