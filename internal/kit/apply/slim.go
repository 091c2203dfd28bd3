package apply

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// CachedAnnotation marks a slim cached copy (see Slim) and carries the digest of what the transform
// dropped: "<content digest>" or "<content digest>,shared" when a field manager other than the
// operator's (and the trusted ones) wrote the object's main resource. It exists only in the operator's
// cache, never in the cluster: the transform sets it on the copy it stores.
const CachedAnnotation = oplabels.AnnotationDomain + "/cached-content"

// lastAppliedAnnotation is what kubectl apply leaves: a second copy of the whole object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// TrustedManagers are field managers of Kubernetes' own controllers, whose writes to a child's main
// resource (the Deployment controller's revision annotation, the volume binder's annotations on a claim)
// never touch the fields the operator applies. A write by any other manager marks the cached child
// "shared": after a restart it is read once from the API server and compared in full before it is
// trusted.
var TrustedManagers = []string{"kube-controller-manager"}

// Slim returns a cache transform that keeps, of each object of type T, its identity, owner references,
// the managed-by label, the applied digest and its status (what reconcilers read: the child's state),
// and drops the rest with strip (a ConfigMap's data, a Deployment's pod template...) and its other labels
// and annotations, after recording a digest of everything but the status in CachedAnnotation. The Applier then tells drift from that digest and its
// own memory of each apply (see Applier.Apply) instead of comparing whole objects held in memory.
//
// content returns the part of the object besides metadata and status that the digest covers (its spec,
// or its data); strip clears what the cache need not hold and may keep fields reconcilers read (a
// Deployment's replicas). Managed fields and kubectl's last-applied-configuration annotation go too.
// fieldOwner is the operator's field manager, for telling whether someone else wrote the object.
// Objects of other types pass through unchanged, and a copy already slim is left as it is, except the
// metadata-only copies of T's kind (see slimMetadata).
func Slim[T client.Object](fieldOwner string, content func(T) any, strip func(T)) toolscache.TransformFunc {
	return SlimKeeping(fieldOwner, nil, content, strip)
}

// SlimKeeping is Slim that also keeps the annotations keep names (small ones a reconciler reads from the
// cached copy, such as what a child was rendered from).
func SlimKeeping[T client.Object](fieldOwner string, keep []string, content func(T) any, strip func(T)) toolscache.TransformFunc {
	keptAnnotations := append([]string{DigestAnnotation, LegacyDigestAnnotation}, keep...)
	return func(in any) (any, error) {
		if m, ok := in.(*metav1.PartialObjectMetadata); ok {
			return slimMetadata(m), nil
		}
		obj, ok := in.(T)
		if !ok {
			return in, nil
		}
		annotations := obj.GetAnnotations()
		if _, done := annotations[CachedAnnotation]; done {
			return in, nil
		}
		mark := strconv.FormatUint(contentDigest(obj, content(obj)), 16)
		if shared(obj.GetManagedFields(), fieldOwner) {
			mark += ",shared"
		}
		obj.SetManagedFields(nil)
		strip(obj)
		CompactIdentity(obj)
		// Of the labels and annotations, the digest covers every one; the copy keeps only what is read
		// without it: the managed-by label (Conflict) and the applied digests.
		var kept map[string]string
		if oplabels.IsManaged(obj.GetLabels()) {
			kept = managedLabels
		}
		obj.SetLabels(kept)
		slimAnnotations := map[string]string{CachedAnnotation: mark}
		for _, k := range keptAnnotations {
			if v, ok := annotations[k]; ok {
				slimAnnotations[k] = v
			}
		}
		obj.SetAnnotations(slimAnnotations)
		return obj, nil
	}
}

// slimMetadata is what the cache keeps of the metadata-only copy of one of T's objects: a transform is
// installed per kind, and a controller that watches the kind's metadata (WatchesMetadata, to be woken
// when an object of a name changes: the BackupStore controller and every ConfigMap) gets its objects
// through the same transform as the typed informer. Such a watch only maps an object to requests by its
// name, namespace or labels, and no step reads a metadata copy of the operator's slim children: it keeps
// their identity (name, namespace, UID, resourceVersion, generation), owner references and the managed-by
// label, and drops managed fields, annotations (the digests and what the typed slim copy keeps) and
// other labels. Before, it kept them all, a second and larger copy of each child's metadata.
func slimMetadata(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	var kept map[string]string
	if oplabels.IsManaged(m.Labels) {
		kept = managedLabels
	}
	m.Labels, m.Annotations, m.ManagedFields = kept, nil, nil
	CompactIdentity(m)
	return m
}

// managedLabels is the labels of every slim copy of the operator's objects: one map that they all share,
// which is safe because the cache never writes to what it holds and deep-copies what it hands out (a
// map is the largest part of a small object's metadata).
var managedLabels = map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName}

// contentDigest is the digest Slim records: of the metadata that writers change (labels, annotations but
// the cache's own and kubectl's copy, owner references, finalizers) and content. Status, resourceVersion,
// generation and managed fields are left out, so a status write leaves it unchanged.
func contentDigest(obj client.Object, content any) uint64 {
	annotations := obj.GetAnnotations()
	if _, a := annotations[CachedAnnotation]; a || annotations[lastAppliedAnnotation] != "" {
		kept := make(map[string]string, len(annotations))
		for k, v := range annotations {
			if k != CachedAnnotation && k != lastAppliedAnnotation {
				kept[k] = v
			}
		}
		annotations = kept
	}
	data, _ := json.Marshal(struct { // maps marshal sorted; these types always marshal
		Labels      map[string]string       `json:"l,omitempty"`
		Annotations map[string]string       `json:"a,omitempty"`
		Owners      []metav1.OwnerReference `json:"o,omitempty"`
		Finalizers  []string                `json:"f,omitempty"`
		Content     any                     `json:"c"`
	}{obj.GetLabels(), annotations, obj.GetOwnerReferences(), obj.GetFinalizers(), content})
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}

// shared says whether a manager other than fieldOwner and the trusted ones wrote the main resource.
func shared(entries []metav1.ManagedFieldsEntry, fieldOwner string) bool {
	for _, e := range entries {
		if e.Subresource != "" || e.Manager == fieldOwner {
			continue
		}
		trusted := false
		for _, m := range TrustedManagers {
			trusted = trusted || e.Manager == m
		}
		if !trusted {
			return true
		}
	}
	return false
}

// slimMark reads CachedAnnotation: the content digest and whether the object is shared, or ok false when
// obj is not a slim cached copy.
func slimMark(obj client.Object) (content uint64, isShared, ok bool) {
	mark, ok := obj.GetAnnotations()[CachedAnnotation]
	if !ok {
		return 0, false, false
	}
	digest, flag, _ := strings.Cut(mark, ",")
	content, err := strconv.ParseUint(digest, 16, 64)
	if err != nil {
		return 0, false, false
	}
	return content, flag == "shared", true
}
