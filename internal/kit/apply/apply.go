package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// DigestAnnotation holds a digest of the fields the operator applied to an object.
const DigestAnnotation = oplabels.AnnotationDomain + "/applied-digest"

// LegacyDigestAnnotation is where versions before the one annotation domain kept the digest (the same
// digest of the same fields). An object whose digest is still there, and that holds everything desired, is
// unchanged: rewriting it only to move the key would cost a write per child at upgrade and, for a
// Deployment, bump its generation (annotations count there), so the network would read as not available
// until the Deployment controller caught up. The next real change sends DigestAnnotation, and server-side
// apply removes the old key, which the same field owner applied.
const LegacyDigestAnnotation = "platform-operator.io/applied-digest"

// Result says what Apply did to the cluster.
type Result string

const (
	// Unchanged means the live object already matched: no request was sent.
	Unchanged Result = "Unchanged"
	// Created means the object did not exist and was created.
	Created Result = "Created"
	// Updated means the live object differed and was patched.
	Updated Result = "Updated"
)

// Applier applies desired objects with server-side apply under one field owner.
type Applier struct {
	// Client reads the live object (normally from the manager's cache) and sends the apply request.
	Client client.Client
	// Reader reads straight from the API server when Client's cache does not have the object: the cache
	// holds only what the operator labelled, so an object of the same name that someone else made is
	// invisible to it. Nil trusts the cache (tests of the apply path alone).
	Reader client.Reader
	// FieldOwner is the field manager name every apply request uses.
	FieldOwner string
	// Metadata lists the kinds Client's cache holds as metadata only (MetadataOnly): their children are
	// read from it as PartialObjectMetadata, and whole from Reader when that does not tell them unchanged.
	Metadata []schema.GroupKind

	records records
}

// ConflictError is what Apply returns instead of taking over an object of the desired name that the
// operator did not make, or that another owner (or an earlier object of the owner's name) controls.
type ConflictError struct {
	Kind, Name string
	// Why says whose the object is.
	Why string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s already exists and %s; it is left untouched", e.Kind, e.Name, e.Why)
}

// Conflict says why live, an existing object of desired's kind and name, is not owner's to apply
// over, or returns nil when it is: owner controls it (labels are then restored like any drift), or it
// carries the operator's managed-by label and has no controller (the operator's own, kept when its owner
// went: a retained claim).
func Conflict(live, desired, owner client.Object) *ConflictError {
	kind := desired.GetObjectKind().GroupVersionKind().Kind
	have := metav1.GetControllerOf(live)
	switch {
	case have != nil && have.UID == owner.GetUID():
		return nil
	case have != nil && have.Name == owner.GetName() && have.Kind == owner.GetObjectKind().GroupVersionKind().Kind:
		return &ConflictError{Kind: kind, Name: live.GetName(),
			Why: fmt.Sprintf("belongs to an earlier %s %s (uid %s) that Kubernetes is still deleting", have.Kind, have.Name, have.UID)}
	case have != nil:
		return &ConflictError{Kind: kind, Name: live.GetName(), Why: fmt.Sprintf("is controlled by %s %s", have.Kind, have.Name)}
	case !oplabels.IsManaged(live.GetLabels()):
		return &ConflictError{Kind: kind, Name: live.GetName(),
			Why: fmt.Sprintf("was not made by the operator (it lacks the label %s=%s)", oplabels.ManagedByLabel, oplabels.OperatorName)}
	default:
		return nil
	}
}

// Apply makes the cluster hold desired's fields, for owner: an existing object of desired's name that is
// not owner's (see Conflict) is left untouched and reported as a *ConflictError. desired is a typed object
// with TypeMeta set; only the fields it sets are sent, so fields other managers own (or the server
// defaults) are left alone. When the live object already holds every desired field with the same value,
// nothing is sent: an unchanged owner costs no write.
//
// A child the cache holds whole is compared with desired field by field (Contains). A child the cache
// holds slim (see Slim) is known unchanged without a request when it is the object this Applier last
// applied or verified with the same applied digest: same UID, and either the resourceVersion that apply
// returned (or an older one: the cache has not caught up with the write yet) or the same content digest
// (only its status moved). After a restart, with nothing remembered, a slim child is trusted when it
// carries desired's applied digest and no other writer touched it (CachedAnnotation); otherwise (another
// writer changed it, or it was written while nothing was remembered) it is read from the API server and
// compared in full, and applied only if it differs. Drift by another writer is thus repaired as before,
// at the cost of one read.
//
// A child the cache does not have is sent create-only (createOnlyVersion): the API server creates it if
// the name is free and refuses otherwise, and only then is the object read and judged (Conflict). A new
// object thus costs one request, not a read and a write.
//
// On success desired holds the live object, as client writes leave it: the API server's answer when a
// request was sent, otherwise the object read, or desired's own fields with the cached metadata and status
// of a slim child. Callers read the child's status from it rather than from a cache that may not have
// seen their own write yet.
func (a *Applier) Apply(ctx context.Context, owner, desired client.Object) (Result, error) {
	return a.ApplyWith(ctx, owner, desired, Options{})
}

// ApplyWith is Apply with where it reads and writes changed by o (see Options); Options{} is Apply.
func (a *Applier) ApplyWith(ctx context.Context, owner, desired client.Object, o Options) (Result, error) {
	check := func(read bool) (*unstructured.Unstructured, Result, bool, error) {
		if o.Live != nil {
			return a.checkLive(ctx, owner, desired, o.Live)
		}
		return a.check(ctx, owner, desired, read)
	}
	want, result, done, err := check(false)
	if done || err != nil {
		return result, err
	}
	gvk := want.GroupVersionKind()
	rkey := childKey(gvk, desired.GetName())
	// The cache path sends create-only when a Reader can judge a name that turns out taken; Live has
	// already asked the API server. A dry run creates nothing, so it needs no guard.
	createOnly := result == Created && (a.Reader != nil || o.Live != nil) && !o.DryRun
	if createOnly {
		want.SetResourceVersion(createOnlyVersion)
	}
	opts := []client.PatchOption{client.FieldOwner(a.FieldOwner), client.ForceOwnership}
	// The answer is decoded straight into desired (a typed object: protobuf for the built-in kinds), where
	// Apply used to decode it into a map and convert that into desired: the map and the conversion were a
	// fifth of an apply's CPU, and nobody read them. A dry run's answer goes into a copy.
	target := desired
	if o.DryRun {
		opts = append(opts, client.DryRunAll)
		target = desired.DeepCopyObject().(client.Object)
	}
	var w client.Writer = a.Client
	if o.Writer != nil {
		w = o.Writer
	}
	send := func() error {
		body, err := json.Marshal(want.Object)
		if err != nil {
			return err
		}
		// The body is what client.ApplyConfigurationFromUnstructured(want) sends: want's JSON, as an
		// apply patch.
		return w.Patch(ctx, target, client.RawPatch(types.ApplyPatchType, body), opts...)
	}
	err = send()
	if createOnly && apierrors.IsConflict(err) && o.Live != nil {
		// Live found the name free on the API server a moment ago: someone made an object of it since.
		return "", &ConflictError{Kind: gvk.Kind, Name: desired.GetName(), Why: "was made by someone else while the operator was creating it"}
	}
	if createOnly && apierrors.IsConflict(err) {
		// The name is taken (by someone else, or by our own object the cache has not seen yet): read it
		// and decide as for any existing object.
		if want, result, done, err = check(true); done || err != nil {
			return result, err
		}
		if result == Created { // it went again in between: still create-only
			want.SetResourceVersion(createOnlyVersion)
		}
		err = send()
	}
	if err != nil {
		if o.Live == nil {
			a.records.drop(owner, rkey)
		}
		return "", fmt.Errorf("apply %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(desired), err)
	}
	if o.DryRun {
		return result, nil
	}
	// The apply request decoded the server's answer into desired; a typed decode may leave TypeMeta empty.
	desired.GetObjectKind().SetGroupVersionKind(gvk)
	if o.Live == nil {
		a.records.put(owner, childRecord{key: rkey, uid: hash(string(desired.GetUID())), digest: parseDigest(desired.GetAnnotations()[DigestAnnotation]),
			rv: parseRV(desired.GetResourceVersion())})
	}
	return result, nil
}

// Holds says whether the cluster already holds desired's fields for owner, as Apply would find it, without
// ever writing: true leaves desired holding the live object as Apply does, false means Apply would send
// a request (the object differs, or is missing). An object that is not owner's is a *ConflictError.
func (a *Applier) Holds(ctx context.Context, owner, desired client.Object) (bool, error) {
	_, result, done, err := a.check(ctx, owner, desired, true)
	return done && err == nil && result == Unchanged, err
}

// createOnlyVersion is the resourceVersion Apply sends with an object the cache does not have: no object
// can have it (etcd's revisions are int64; this is the largest uint64), so the API server creates the
// object if the name is free, in one atomic step, and answers 409 Conflict if anything holds the name.
// That replaces a read before every creation, and leaves no moment in which an object someone else
// creates under that name could be taken over.
const createOnlyVersion = "18446744073709551615"

// CreateOnlyVersion is createOnlyVersion for callers that apply objects outside an Applier (a tenant's
// deployed objects): sent as an object's resourceVersion, it makes an apply a create that fails with a
// conflict when the name is taken, instead of taking the object over.
const CreateOnlyVersion = createOnlyVersion

// check is Apply up to the request: done is true when Apply is over (the object is unchanged, or an
// error), with its result; otherwise want is what to apply and result what applying it will be. An
// object the cache does not have is read from the API server (Reader) only when read is true; otherwise
// its result is Created and Apply sends it create-only (createOnlyVersion).
func (a *Applier) check(ctx context.Context, owner, desired client.Object, read bool) (want *unstructured.Unstructured, result Result, done bool, err error) {
	want, err = ToUnstructured(desired)
	if err != nil {
		return nil, "", true, err
	}
	gvk := want.GroupVersionKind()
	if gvk.Kind == "" {
		return nil, "", true, fmt.Errorf("apply %T %s: TypeMeta is not set", desired, client.ObjectKeyFromObject(desired))
	}

	// Read into the typed kind so the cached client serves it from the informer it already has, or as
	// metadata for a kind cached so.
	newTyped := func() (client.Object, error) {
		live, err := a.Client.Scheme().New(gvk)
		if err != nil {
			return nil, fmt.Errorf("apply %s: %w", gvk.Kind, err)
		}
		obj, ok := live.(client.Object)
		if !ok {
			return nil, fmt.Errorf("apply %s: %T is not a client.Object", gvk.Kind, live)
		}
		return obj, nil
	}
	var liveObj client.Object
	metadataOnly := a.metadataOnly(gvk)
	if metadataOnly {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		liveObj = m
	} else if liveObj, err = newTyped(); err != nil {
		return nil, "", true, err
	}
	result = Updated
	key := client.ObjectKeyFromObject(desired)
	rkey := childKey(gvk, key.Name)
	wantDigest := parseDigest(want.GetAnnotations()[DigestAnnotation])
	switch err := a.Client.Get(ctx, key, liveObj); {
	case apierrors.IsNotFound(err):
		result = Created
		if a.Reader == nil || !read {
			break
		}
		// The name is taken, or the cache lags: one read, so that nobody's object is taken over. It reads
		// the whole object, which compare needs.
		if metadataOnly {
			if liveObj, err = newTyped(); err != nil {
				return nil, "", true, err
			}
		}
		switch err := a.Reader.Get(ctx, key, liveObj); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, "", true, fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
		default:
			if c := Conflict(liveObj, desired, owner); c != nil {
				return nil, "", true, c
			}
			// Ours; the cache has not seen it yet.
			if res, ok, err := a.compare(owner, desired, want, liveObj, rkey, wantDigest, 0); ok {
				return nil, res, true, err
			}
			result = Updated
		}
	case err != nil:
		return nil, "", true, fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
	default:
		if c := Conflict(liveObj, desired, owner); c != nil {
			return nil, "", true, c
		}
		content, isShared, slim := slimMark(liveObj)
		if !slim && metadataOnly {
			// A metadata copy no MetadataOnly transform marked: nothing to tell it by, read it whole.
			content, isShared, slim = 0, true, true
		}
		if !slim {
			if res, ok, err := a.compare(owner, desired, want, liveObj, rkey, wantDigest, 0); ok {
				return nil, res, true, err
			}
			break
		}
		if a.known(owner, liveObj, rkey, wantDigest, content, isShared) {
			return nil, Unchanged, true, setSlimLive(desired, want, liveObj)
		}
		if !hasDigest(liveObj, wantDigest) || a.Reader == nil {
			break // it lacks desired's digest, so it cannot hold desired: apply
		}
		// Changed by someone, or not known: read it whole and compare.
		fullObj, err := newTyped()
		if err != nil {
			return nil, "", true, err
		}
		if err := a.Reader.Get(ctx, key, fullObj); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, "", true, fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
			}
			result = Created
			break
		}
		if c := Conflict(fullObj, desired, owner); c != nil {
			return nil, "", true, c
		}
		seen := uint64(0) // the content digest holds for the object read only at the cached version
		if fullObj.GetResourceVersion() == liveObj.GetResourceVersion() {
			seen = content
		}
		if res, ok, err := a.compare(owner, desired, want, fullObj, rkey, wantDigest, seen); ok {
			return nil, res, true, err
		}
	}

	return want, result, false, nil
}

// compare checks a whole live object against want: when it holds every desired field it is remembered
// (content is the cache's content digest at the same resourceVersion, or 0) and Unchanged returned with
// done true; otherwise done is false and the caller applies.
func (a *Applier) compare(owner, desired client.Object, want *unstructured.Unstructured, live client.Object,
	rkey, wantDigest, content uint64) (Result, bool, error) {
	// An object read from the API server into a typed struct has no TypeMeta; a cached one has.
	live.GetObjectKind().SetGroupVersionKind(want.GroupVersionKind())
	liveMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return "", true, err
	}
	if !holds(live, liveMap, want) {
		return "", false, nil
	}
	a.records.put(owner, childRecord{key: rkey, uid: hash(string(live.GetUID())), digest: wantDigest,
		rv: parseRV(live.GetResourceVersion()), content: content})
	return Unchanged, true, setLive(desired, liveMap)
}

// known says whether the slim cached child live is, as far as this Applier can tell without a request,
// the object it last applied or verified for the same desired digest (see Apply), and updates the record.
func (a *Applier) known(owner, live client.Object, rkey, wantDigest, content uint64, isShared bool) bool {
	uid, rv := hash(string(live.GetUID())), parseRV(live.GetResourceVersion())
	rec, ok := a.records.get(owner, rkey)
	if ok && rec.uid == uid && rec.digest == wantDigest && wantDigest != 0 {
		switch {
		case rv != 0 && rv == rec.rv:
			if rec.content != content {
				rec.content = content
				a.records.put(owner, rec)
			}
			return true
		case rec.content != 0 && rec.content == content:
			// Only the status (or nothing the digest covers) moved since.
			rec.rv = rv
			a.records.put(owner, rec)
			return true
		case rv != 0 && rec.rv != 0 && rv < rec.rv:
			// The cache has not yet seen the write whose answer the record holds.
			return true
		}
		return false
	}
	if ok || isShared || !hasDigest(live, wantDigest) {
		return false
	}
	// Nothing remembered (a restart): the child carries desired's digest and only the operator wrote it.
	a.records.put(owner, childRecord{key: rkey, uid: uid, digest: wantDigest, rv: rv, content: content})
	return true
}

// hasDigest says whether live carries the applied digest d, under DigestAnnotation or, with nothing
// there, under LegacyDigestAnnotation.
func hasDigest(live client.Object, d uint64) bool {
	annotations := live.GetAnnotations()
	v, ok := annotations[DigestAnnotation]
	if !ok {
		v = annotations[LegacyDigestAnnotation]
	}
	return d != 0 && parseDigest(v) == d
}

// setSlimLive overwrites desired with its own fields and the metadata and status of live, a slim cached
// copy (whose dropped fields are desired's). live is the caller's own copy (the cache's deep copy), so
// desired may take its maps.
func setSlimLive(desired client.Object, want *unstructured.Unstructured, live client.Object) error {
	if m, ok := live.(*metav1.PartialObjectMetadata); ok && setMetadataLive(desired, m) {
		return nil
	}
	// A typed object of live's type takes live's metadata and status as they are: no conversion to a map
	// and back, which for a Deployment was most of an unchanged child's cost.
	if dv, lv := reflect.ValueOf(desired), reflect.ValueOf(live); dv.Type() == lv.Type() && dv.Kind() == reflect.Pointer &&
		dv.Elem().Kind() == reflect.Struct {
		if meta := lv.Elem().FieldByName("ObjectMeta"); meta.IsValid() && meta.Type() == objectMetaType {
			dv.Elem().FieldByName("ObjectMeta").Set(meta)
			if status := lv.Elem().FieldByName("Status"); status.IsValid() {
				dv.Elem().FieldByName("Status").Set(status)
			}
			delete(desired.GetAnnotations(), CachedAnnotation)
			return nil
		}
	}
	liveMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return err
	}
	out := make(map[string]any, len(want.Object)+1)
	for k, v := range want.Object {
		out[k] = v
	}
	md, _ := liveMap["metadata"].(map[string]any)
	if annotations, ok := md["annotations"].(map[string]any); ok {
		delete(annotations, CachedAnnotation)
	}
	out["metadata"] = md
	if status, ok := liveMap["status"]; ok {
		out["status"] = status
	}
	return setLive(desired, out)
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// holds says whether live (liveMap its map) holds every field of want, with want's applied digest
// under DigestAnnotation or, when live still keeps it there, LegacyDigestAnnotation.
func holds(live client.Object, liveMap map[string]any, want *unstructured.Unstructured) bool {
	return Contains(liveMap, want.Object) || Contains(liveMap, underLegacyKey(live, want).Object)
}

// underLegacyKey is want with its digest moved to LegacyDigestAnnotation when live carries that digest
// there and none under DigestAnnotation; otherwise want itself.
func underLegacyKey(live client.Object, want *unstructured.Unstructured) *unstructured.Unstructured {
	have := live.GetAnnotations()
	digest := want.GetAnnotations()[DigestAnnotation]
	if _, current := have[DigestAnnotation]; current || have[LegacyDigestAnnotation] != digest {
		return want
	}
	legacy := want.DeepCopy()
	annotations := legacy.GetAnnotations()
	delete(annotations, DigestAnnotation)
	annotations[LegacyDigestAnnotation] = digest
	legacy.SetAnnotations(annotations)
	return legacy
}

// setLive overwrites obj with the object live holds.
func setLive(obj client.Object, live map[string]any) error {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// The converter fills only typed structs; an Unstructured takes the map.
		gvk := u.GroupVersionKind()
		u.Object = live
		u.SetGroupVersionKind(gvk)
		return nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live, obj); err != nil {
		return fmt.Errorf("read back %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// ToUnstructured turns a typed object into the map an apply request sends: no status, no server-set
// metadata, no nulls.
func ToUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields"} {
			delete(md, k)
		}
	}
	pruneNulls(m)
	u := &unstructured.Unstructured{Object: m}
	// Contains cannot see a field we stopped setting, so the digest of everything we set rides along:
	// dropping a label or a list entry changes it and forces the apply that removes the field.
	sum, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("digest %T: %w", obj, err)
	}
	digest := sha256.Sum256(sum)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[DigestAnnotation] = hex.EncodeToString(digest[:8])
	u.SetAnnotations(annotations)
	return u, nil
}

func pruneNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			pruneNulls(e)
		}
	case []any:
		for _, e := range t {
			pruneNulls(e)
		}
	}
}
