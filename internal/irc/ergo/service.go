package ergo

import (
	corev1 "k8s.io/api/core/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
)

// Service exposes every listener inside the cluster, one named TCP port each. Target ports refer to
// the container ports by name, so Service and Deployment cannot disagree about numbers.
func Service(n *ircv1.ErgoNetwork) *corev1.Service {
	return ircnet.Service(childMeta(n), ServiceName(n), ServicePorts(n))
}
