package apply

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// MetadataOnly returns the cache transform of a kind whose children the operator only ever applies and
// caches as metadata (controller-runtime's metadata-only watches, WatchesMetadata): the API server sends
// only each object's metadata, and the cache keeps of it the identity (name, namespace, UID,
// resourceVersion, generation), owner references, the managed-by label, the applied digests and
// CachedAnnotation, whose content digest is 0 (the content never reaches the operator) and whose
// "shared" flag says, from the managed fields, whether a writer other than fieldOwner (and the trusted
// ones) touched the object. List the kind in Applier.Metadata so the Applier reads it as metadata.
//
// What the Applier then knows of such a child (see Apply): it is the object last applied or verified
// while its resourceVersion is the one that apply answered (nobody wrote it since); any other version is
// read whole from the API server once and compared, so an edit by hand is repaired as before; after a
// restart it is trusted when it carries desired's applied digest and only the operator wrote it. Unlike a
// slim typed copy, no content digest tells a status write from an edit, so choose it for kinds whose
// status nobody writes (a NetworkPolicy, a RoleBinding), not for one a controller keeps updating (a
// ResourceQuota's usage).
//
// Typed objects of the kind (no controller should read them) pass through unchanged.
func MetadataOnly(fieldOwner string) toolscache.TransformFunc {
	return func(in any) (any, error) {
		m, ok := in.(*metav1.PartialObjectMetadata)
		if !ok {
			return in, nil
		}
		if _, done := m.Annotations[CachedAnnotation]; done {
			return m, nil
		}
		mark := "0"
		if shared(m.ManagedFields, fieldOwner) {
			mark += ",shared"
		}
		kept := map[string]string{CachedAnnotation: mark}
		for _, k := range []string{DigestAnnotation, LegacyDigestAnnotation} {
			if v, ok := m.Annotations[k]; ok {
				kept[k] = v
			}
		}
		var labels map[string]string
		if oplabels.IsManaged(m.Labels) {
			labels = managedLabels
		}
		m.Labels, m.Annotations, m.ManagedFields = labels, kept, nil
		CompactIdentity(m)
		return m, nil
	}
}

// metadataOnly says whether the Applier reads objects of gvk from the cache as metadata.
func (a *Applier) metadataOnly(gvk schema.GroupVersionKind) bool {
	return slices.Contains(a.Metadata, gvk.GroupKind())
}

// setMetadataLive overwrites desired's metadata with live's, a metadata-only cached copy, and keeps
// desired's own fields (which live, unchanged, holds): the metadata-only counterpart of setSlimLive.
// desired must be a typed object (a pointer to a struct with ObjectMeta).
func setMetadataLive(desired any, live *metav1.PartialObjectMetadata) bool {
	dv := reflect.ValueOf(desired)
	if dv.Kind() != reflect.Pointer || dv.Elem().Kind() != reflect.Struct {
		return false
	}
	meta := dv.Elem().FieldByName("ObjectMeta")
	if !meta.IsValid() || meta.Type() != objectMetaType {
		return false
	}
	meta.Set(reflect.ValueOf(live.ObjectMeta))
	delete(live.Annotations, CachedAnnotation)
	return true
}
