package apply

import (
	"hash/fnv"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// records is what the Applier remembers of each child it applied or verified, per owner: a few words per
// child, so that a child cached slim (see Slim) is known unchanged without holding it whole.
type records struct {
	mu     sync.Mutex
	owners map[types.NamespacedName]*ownerRecords
}

type ownerRecords struct {
	uid      uint64 // hash of the owner's UID: a new owner of the same name starts afresh
	children []childRecord
}

// childRecord is one child as the operator last applied or verified it. Every field is a hash or a
// number, so a record costs 40 bytes whatever the names.
type childRecord struct {
	key uint64 // hash of the child's group, kind and name
	uid uint64 // hash of the child's UID
	// digest is the applied digest of the desired object that was applied or verified.
	digest uint64
	// rv is the child's resourceVersion as the apply's answer or the verifying read returned it; 0 when
	// it is not a number.
	rv uint64
	// content is the content digest the cache reported at rv (CachedAnnotation); 0 until it has.
	content uint64
}

func hash(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

func childKey(gvk schema.GroupVersionKind, name string) uint64 {
	return hash(gvk.Group, gvk.Kind, name)
}

// parseRV reads a resourceVersion as the number etcd makes it, or 0.
func parseRV(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// parseDigest reads an applied digest (hex), or 0.
func parseDigest(d string) uint64 {
	n, err := strconv.ParseUint(d, 16, 64)
	if err != nil {
		return 0
	}
	return n
}

func (r *records) get(owner client.Object, key uint64) (childRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.owners[client.ObjectKeyFromObject(owner)]
	if o == nil || o.uid != hash(string(owner.GetUID())) {
		return childRecord{}, false
	}
	for _, c := range o.children {
		if c.key == key {
			return c, true
		}
	}
	return childRecord{}, false
}

func (r *records) put(owner client.Object, rec childRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owners == nil {
		r.owners = map[types.NamespacedName]*ownerRecords{}
	}
	k := client.ObjectKeyFromObject(owner)
	uid := hash(string(owner.GetUID()))
	o := r.owners[k]
	if o == nil || o.uid != uid {
		o = &ownerRecords{uid: uid}
		r.owners[k] = o
	}
	for i := range o.children {
		if o.children[i].key == rec.key {
			o.children[i] = rec
			return
		}
	}
	o.children = append(o.children, rec)
}

func (r *records) drop(owner client.Object, key uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.owners[client.ObjectKeyFromObject(owner)]
	if o == nil {
		return
	}
	for i := range o.children {
		if o.children[i].key == key {
			o.children = append(o.children[:i], o.children[i+1:]...)
			return
		}
	}
}

// Forget drops what the Applier remembers of an owner's children: call it when the owner is gone.
func (a *Applier) Forget(owner types.NamespacedName) {
	a.records.mu.Lock()
	defer a.records.mu.Unlock()
	delete(a.records.owners, owner)
}
