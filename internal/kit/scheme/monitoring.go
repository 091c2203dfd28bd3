package scheme

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/platform-operator/platform-operator/internal/kit/monitoring"
)

// The Prometheus Operator's PodMonitor, which a SojuBouncer with metrics writes, in a file of its own
// like the Istio kinds.
func init() {
	utilruntime.Must(monitoring.AddToScheme(Scheme))
}
