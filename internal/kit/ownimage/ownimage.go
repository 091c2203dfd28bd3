// Package ownimage finds the image the operator itself runs, which the Jobs that run the operator's binary
// (backups, restores) copy it from.
package ownimage

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ManagerContainer is the operator's container in its Deployment (config/manager/manager.yaml).
const ManagerContainer = "manager"

// Resolver finds the image the operator runs when RELATED_IMAGE_OPERATOR does not name it: the manager
// container's image in the operator's own pod (POD_NAMESPACE and POD_NAME, from the downward API), read
// with pods list, the one pods permission the operator has. The answer is kept: the image of a running
// pod does not change.
type Resolver struct {
	// Image is the image when known from configuration (RELATED_IMAGE_OPERATOR): Get returns it as it is.
	Image string
	// Reader lists pods (the API server, not the cache: the operator's pod carries no label of the operator's).
	Reader client.Reader
	// Namespace and Name are the operator's pod's.
	Namespace, Name string

	mu    sync.Mutex
	image string
}

// Get returns the image, or "" when it cannot be found (no pod name, not permitted, no manager container).
func (o *Resolver) Get(ctx context.Context) string {
	if o == nil {
		return ""
	}
	if o.Image != "" {
		return o.Image
	}
	if o.Name == "" || o.Namespace == "" {
		return ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.image != "" {
		return o.image
	}
	var pods corev1.PodList
	if err := o.Reader.List(ctx, &pods, client.InNamespace(o.Namespace), client.MatchingFields{"metadata.name": o.Name}); err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if c.Name == ManagerContainer {
				o.image = c.Image
			}
		}
	}
	return o.image
}
