package reconcile

import (
	"testing"

	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// stubClient is a client of the test's own, told apart from the manager's by its address.
type stubClient struct{ client.Client }

func TestFromManager(t *testing.T) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}

	// Unset fields get the manager's.
	var (
		c      client.Client
		reader client.Reader
		rec    record.EventRecorder
	)
	FromManager(mgr, &c, &reader, &rec)
	if c != mgr.GetClient() || reader != mgr.GetAPIReader() || rec == nil {
		t.Errorf("client %v, reader %v, recorder %v; want the manager's", c, reader, rec)
	}

	// Fields a test set are kept: the positive control that FromManager does not overwrite them.
	own := &stubClient{}
	ownRec := record.NewFakeRecorder(1)
	c, reader, rec = own, own, ownRec
	FromManager(mgr, &c, &reader, &rec)
	if c != own || reader != own || rec != ownRec {
		t.Errorf("client %v, reader %v, recorder %v; want the ones set", c, reader, rec)
	}

	// A reconciler without a reader passes nil.
	c, rec = nil, nil
	FromManager(mgr, &c, nil, &rec)
	if c != mgr.GetClient() || rec == nil {
		t.Errorf("client %v, recorder %v; want the manager's", c, rec)
	}
}
