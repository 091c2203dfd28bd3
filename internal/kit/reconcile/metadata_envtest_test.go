package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// A child kind cached as metadata only (apply.MetadataOnly, Applier.Metadata): unchanged costs no request,
// an edit by hand is repaired (also one made while the Applier remembered nothing, as after a restart),
// and an object of the same name that the operator did not make is never taken over.
func TestApplierMetadataOnlyChild(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const owner = "platform-operator-test"
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.Scheme, ByObject: map[client.Object]cache.ByObject{
		&rbacv1.RoleBinding{}: {Transform: apply.MetadataOnly(owner)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	gvk := rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	probe := &metav1.PartialObjectMetadata{}
	probe.SetGroupVersionKind(gvk)
	if _, err := c.GetInformer(ctx, probe); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	direct, writes := countingClient(t)
	cached, err := client.New(cfg, client.Options{Scheme: scheme.Scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, direct)
	network := read(t, direct, newNetwork(t, direct, ns))
	reader := &testutil.CountingReader{Reader: direct}
	newApplier := func() *apply.Applier {
		return &apply.Applier{Client: writingClient{Client: cached, w: direct}, Reader: reader, FieldOwner: owner,
			Metadata: []schema.GroupKind{{Group: rbacv1.GroupName, Kind: "RoleBinding"}}}
	}
	binding := func(name, subject string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(network, ircv1.GroupVersion.WithKind("ErgoNetwork"))}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: subject, Namespace: ns}}}
	}
	// cachedAt waits until the cache holds name at least at resourceVersion rv ("" for any).
	cachedAt := func(name, rv string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(gvk)
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m)
			if err == nil && (rv == "" || m.ResourceVersion == rv) {
				if m.Annotations[apply.CachedAnnotation] == "" || m.ManagedFields != nil {
					t.Fatalf("the metadata copy is not cut by MetadataOnly: %+v", m.ObjectMeta)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cache never held %s at %q: %v", name, rv, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// editByHand changes the subject as kubectl edit would (an update by another field manager).
	editByHand := func(name string) {
		t.Helper()
		rb := &rbacv1.RoleBinding{}
		if err := direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rb); err != nil {
			t.Fatal(err)
		}
		rb.Subjects[0].Name = "intruder"
		if err := direct.Update(ctx, rb, client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
		cachedAt(name, rb.ResourceVersion)
	}
	subject := func(name string) string {
		t.Helper()
		rb := &rbacv1.RoleBinding{}
		if err := direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rb); err != nil {
			t.Fatal(err)
		}
		return rb.Subjects[0].Name
	}
	// expect applies desired and checks the result, the writes and the whole-object reads it cost.
	expect := func(a *apply.Applier, desired *rbacv1.RoleBinding, want apply.Result, wantWrites, wantReads int) {
		t.Helper()
		w, r := writes.Load(), reader.Gets
		got, err := a.Apply(ctx, network, desired)
		if err != nil || got != want {
			t.Fatalf("Apply %s = %s, %v; want %s", desired.Name, got, err, want)
		}
		if n := int(writes.Load() - w); n != wantWrites {
			t.Errorf("Apply %s (%s) cost %d writes, want %d", desired.Name, got, n, wantWrites)
		}
		if n := reader.Gets - r; n != wantReads {
			t.Errorf("Apply %s (%s) cost %d reads, want %d", desired.Name, got, n, wantReads)
		}
		if desired.UID == "" || desired.Annotations[apply.CachedAnnotation] != "" {
			t.Errorf("desired does not hold the live object's metadata: %+v", desired.ObjectMeta)
		}
	}

	a := newApplier()
	first := binding("first", "app")
	expect(a, first, apply.Created, 1, 0)
	cachedAt("first", first.ResourceVersion)
	expect(a, binding("first", "app"), apply.Unchanged, 0, 0)

	By := t.Log
	By("edited by hand: read whole once, and repaired")
	editByHand("first")
	expect(a, binding("first", "app"), apply.Updated, 1, 1)
	if s := subject("first"); s != "app" {
		t.Errorf("the edited subject was not repaired: %q", s)
	}

	By("a restart (nothing remembered): a child only the operator wrote is trusted, with no request")
	second := binding("second", "app")
	expect(a, second, apply.Created, 1, 0)
	cachedAt("second", second.ResourceVersion)
	expect(newApplier(), binding("second", "app"), apply.Unchanged, 0, 0)

	By("edited by hand while nothing was remembered: read whole, and repaired")
	editByHand("second")
	expect(newApplier(), binding("second", "app"), apply.Updated, 1, 1)
	if s := subject("second"); s != "app" {
		t.Errorf("the subject edited during the restart was not repaired: %q", s)
	}

	By("an object of the name that the operator did not make is left alone")
	theirs := binding("theirs", "someone")
	theirs.Labels, theirs.OwnerReferences = nil, nil
	if err := direct.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	_, err = newApplier().Apply(ctx, network, binding("theirs", "app"))
	if c := (*apply.ConflictError)(nil); !errors.As(err, &c) {
		t.Fatalf("Apply over someone's RoleBinding = %v, want a ConflictError", err)
	}
	if s := subject("theirs"); s != "someone" {
		t.Errorf("someone's RoleBinding was changed: subject %q", s)
	}
	if err := direct.Delete(ctx, theirs); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// writingClient reads through Client (the cache) and writes through w (the counting direct client).
type writingClient struct {
	client.Client
	w client.Client
}

func (c writingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.w.Patch(ctx, obj, patch, opts...)
}
