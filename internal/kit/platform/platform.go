package platform

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Capabilities are the optional APIs the operator can use on this cluster.
type Capabilities struct {
	// CertManager is true when cert-manager.io/v1 Certificates are served.
	CertManager bool
	// Routes is true when route.openshift.io/v1 Routes are served.
	Routes bool
	// Istio is true when networking.istio.io/v1 Gateways and VirtualServices are served.
	Istio bool
	// PodMonitors is true when the Prometheus Operator's monitoring.coreos.com/v1 PodMonitors are served.
	PodMonitors bool
	// OpenShift is true when the cluster enforces SecurityContextConstraints, which assign pod user and
	// group IDs themselves.
	OpenShift bool
	// Backups is true when the operator's own backup.josie.cloud/v1alpha1 Backups are served. Their CRDs
	// ship with the operator, but an install may leave them out: the kinds a Backup names then only lack
	// their last backup in status (docs/backup.md).
	Backups bool
}

var (
	certificates         = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	routes               = schema.GroupVersionResource{Group: "route.openshift.io", Version: "v1", Resource: "routes"}
	sccs                 = schema.GroupVersionResource{Group: "security.openshift.io", Version: "v1", Resource: "securitycontextconstraints"}
	podMonitors          = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}
	istioGateways        = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "gateways"}
	istioVirtualServices = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}
	backups              = schema.GroupVersionResource{Group: "backup.josie.cloud", Version: "v1alpha1", Resource: "backups"}
)

// Discover asks the API server which optional APIs it serves.
func Discover(cfg *rest.Config) (Capabilities, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Capabilities{}, fmt.Errorf("discovery client: %w", err)
	}
	return DiscoverWith(dc)
}

// DiscoverWith is Discover with a given discovery client.
func DiscoverWith(dc discovery.DiscoveryInterface) (Capabilities, error) {
	var caps Capabilities
	for _, c := range []struct {
		gvr schema.GroupVersionResource
		out *bool
	}{{certificates, &caps.CertManager}, {routes, &caps.Routes}, {sccs, &caps.OpenShift}, {podMonitors, &caps.PodMonitors}, {backups, &caps.Backups}} {
		ok, err := serves(dc, c.gvr)
		if err != nil {
			return Capabilities{}, err
		}
		*c.out = ok
	}
	// Istio counts only when both kinds the operator writes are served.
	for _, gvr := range []schema.GroupVersionResource{istioGateways, istioVirtualServices} {
		ok, err := serves(dc, gvr)
		if err != nil {
			return Capabilities{}, err
		}
		if !ok {
			return caps, nil
		}
	}
	caps.Istio = true
	return caps, nil
}

func serves(dc discovery.DiscoveryInterface, gvr schema.GroupVersionResource) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}
