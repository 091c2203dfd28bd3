package ergo

import (
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
)

// childMeta is the identity the shared builders (internal/irc/ircnet) give a network's children.
func childMeta(n *ircv1.ErgoNetwork) ircnet.Meta {
	return ircnet.Meta{Namespace: n.Namespace, Labels: Labels(n), Selector: SelectorLabels(n), Owner: OwnerReference(n)}
}
