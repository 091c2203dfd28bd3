// Package scheme is the one runtime.Scheme of the manager, its tests and the local tooling: every kind
// the operator reads or writes.
package scheme

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// Scheme holds core, apps, networking, every platform-operator API group (irc, catalyst, homelab, iot, backup),
// cert-manager v1 and OpenShift route/v1.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(ircv1.AddToScheme(Scheme))
	utilruntime.Must(catalystv1.AddToScheme(Scheme))
	utilruntime.Must(homelabv1.AddToScheme(Scheme))
	utilruntime.Must(iotv1.AddToScheme(Scheme))
	utilruntime.Must(backupv1.AddToScheme(Scheme))
	utilruntime.Must(cmv1.AddToScheme(Scheme))
	utilruntime.Must(routev1.AddToScheme(Scheme))
}
