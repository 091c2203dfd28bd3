package reconcile

import (
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// FromManager fills in, at SetupWithManager, what a reconciler's exported fields left nil (a test may
// set its own): c with the manager's client (cached reads), reader with its API reader (reads from the
// API server, for what the cache holds only the metadata of) and rec with a recorder under the
// operator's name. Pass nil for a field the reconciler does not have.
func FromManager(mgr ctrl.Manager, c *client.Client, reader *client.Reader, rec *record.EventRecorder) {
	if c != nil && *c == nil {
		*c = mgr.GetClient()
	}
	if reader != nil && *reader == nil {
		*reader = mgr.GetAPIReader()
	}
	if rec != nil && *rec == nil {
		*rec = mgr.GetEventRecorderFor(oplabels.OperatorName)
	}
}
