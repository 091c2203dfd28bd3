package apply

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Known says, without building the desired object, whether live (a child as read from the cache, its
// TypeMeta set) is still what this Applier last applied or verified for owner with the applied digest
// digest: the check Apply makes of a child cached slim, with no request and no conversion.
//
// A reconciler that remembers the digest of what it applied for its owner's current generation calls it
// to skip building a costly desired object (a rendered config) when nothing changed. False means only
// "not known unchanged": build the object and Apply it, which compares, repairs or creates as usual. A
// child cached whole, of another owner, or changed by someone else is never Known.
func (a *Applier) Known(owner, live client.Object, digest string) bool {
	gvk := live.GetObjectKind().GroupVersionKind()
	want := parseDigest(digest)
	if gvk.Kind == "" || want == 0 {
		return false
	}
	content, isShared, slim := slimMark(live)
	if !slim || Conflict(live, live, owner) != nil {
		return false
	}
	return a.known(owner, live, childKey(gvk, live.GetName()), want, content, isShared)
}
