package scheme

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/platform-operator/platform-operator/internal/kit/istio"
)

// The Istio kinds the homelab Domain and AuthentikServer write (Gateway, VirtualService), in a file of
// their own so that the group adding them did not edit the shared list above.
func init() {
	utilruntime.Must(istio.AddToScheme(Scheme))
}
