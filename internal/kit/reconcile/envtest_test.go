package reconcile

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The kit's writes are checked against a real kube-apiserver (envtest), started once for the package:
// server-side apply's field ownership is the API server's, not something a fake client models.
var cfg *rest.Config

func TestMain(m *testing.M) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg = env.Config
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
	}
	os.Exit(code)
}

// countingClient is a direct client that counts its write requests.
func countingClient(t *testing.T) (client.Client, *atomic.Int64) {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	return interceptor.NewClient(c, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			n.Add(1)
			return c.Apply(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			n.Add(1)
			return c.Patch(ctx, o, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			n.Add(1)
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	}), &n
}

// newNamespace is testenv.CreateNamespace, failing the test on error.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns, err := testenv.CreateNamespace(context.Background(), c, "kit")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func newNetwork(t *testing.T, c client.Client, ns string) *ircv1.ErgoNetwork {
	t.Helper()
	n := ergotest.MinimalNetwork(ns, "net")
	if err := c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	return n
}

func read(t *testing.T, c client.Client, n *ircv1.ErgoNetwork) *ircv1.ErgoNetwork {
	t.Helper()
	got := &ircv1.ErgoNetwork{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(n), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func conditionTypes(n *ircv1.ErgoNetwork) string {
	var types []string
	for _, c := range n.Status.Conditions {
		types = append(types, c.Type+"="+string(c.Status))
	}
	return strings.Join(types, ",")
}

// write computes a writer's status from the live object, as a controller does, and writes it.
func write(t *testing.T, w *StatusWriter, live *ircv1.ErgoNetwork, mutate func(*ircv1.ErgoNetworkStatus)) {
	t.Helper()
	status := live.Status.DeepCopy()
	mutate(status)
	if err := w.Write(context.Background(), live, status); err != nil {
		t.Fatal(err)
	}
}

func TestStatusWriterTwoWriters(t *testing.T) {
	c, writes := countingClient(t)
	n := newNetwork(t, c, newNamespace(t, c))
	set := func(s *ircv1.ErgoNetworkStatus, typ string, status metav1.ConditionStatus) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: status, Reason: "Test", Message: typ})
	}
	network := &StatusWriter{Client: c, FieldOwner: "test/network", Fields: []string{"observedGeneration", "networkName"},
		Conditions: []string{"Ready", "ConfigReady"}}
	fleet := &StatusWriter{Client: c, FieldOwner: "test/fleet", Conditions: []string{"FleetSynced"}}

	write(t, network, read(t, c, n), func(s *ircv1.ErgoNetworkStatus) {
		s.ObservedGeneration, s.NetworkName = 1, "Net"
		set(s, "Ready", metav1.ConditionTrue)
		set(s, "ConfigReady", metav1.ConditionTrue)
	})
	write(t, fleet, read(t, c, n), func(s *ircv1.ErgoNetworkStatus) { set(s, "FleetSynced", metav1.ConditionTrue) })
	if got := conditionTypes(read(t, c, n)); got != "Ready=True,ConfigReady=True,FleetSynced=True" {
		t.Fatalf("conditions %s, want both writers'", got)
	}

	// The network writer drops ConfigReady and the network name: its own fields go, the fleet's stay.
	write(t, network, read(t, c, n), func(s *ircv1.ErgoNetworkStatus) {
		set(s, "Ready", metav1.ConditionFalse)
		meta.RemoveStatusCondition(&s.Conditions, "ConfigReady")
		s.NetworkName = ""
	})
	got := read(t, c, n)
	if types := conditionTypes(got); types != "Ready=False,FleetSynced=True" {
		t.Errorf("conditions %s after the network writer dropped ConfigReady", types)
	}
	if got.Status.NetworkName != "" || got.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v: networkName should be gone, observedGeneration kept", got.Status)
	}

	// A writer that owns nothing that changed sends nothing, even when another's part differs.
	before := writes.Load()
	write(t, network, got, func(*ircv1.ErgoNetworkStatus) {})
	write(t, fleet, got, func(*ircv1.ErgoNetworkStatus) {})
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes for an unchanged status, want 0", n)
	}

	// A stale read (the cache before the write) of a status already written is not written again.
	stale := got.DeepCopy()
	write(t, fleet, got, func(s *ircv1.ErgoNetworkStatus) { set(s, "FleetSynced", metav1.ConditionFalse) })
	before = writes.Load()
	write(t, fleet, stale, func(s *ircv1.ErgoNetworkStatus) { set(s, "FleetSynced", metav1.ConditionFalse) })
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes from a lagging cache, want 0", n)
	}
}

func TestStatusWriterTakesOverLegacyFields(t *testing.T) {
	ctx := context.Background()
	c, writes := countingClient(t)
	n := newNetwork(t, c, newNamespace(t, c))

	// An earlier version wrote the status with a merge patch under its binary's name.
	live := read(t, c, n)
	orig := live.DeepCopy()
	for _, typ := range []string{"Ready", "RouteReady"} {
		meta.SetStatusCondition(&live.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Old", Message: "old"})
	}
	live.Status.RouteHost = "old.example.com"
	if err := c.Status().Patch(ctx, live, client.MergeFrom(orig), client.FieldOwner("old-operator")); err != nil {
		t.Fatal(err)
	}

	w := &StatusWriter{Client: c, FieldOwner: "test/network", Fields: []string{"routeHost"},
		Conditions: []string{"Ready", "RouteReady"}, LegacyManagers: []string{"old-operator"}}
	before := writes.Load()
	write(t, w, read(t, c, n), func(s *ircv1.ErgoNetworkStatus) {
		meta.RemoveStatusCondition(&s.Conditions, "RouteReady")
		s.RouteHost = ""
	})
	got := read(t, c, n)
	if types := conditionTypes(got); types != "Ready=True" || got.Status.RouteHost != "" {
		t.Errorf("status %s, routeHost %q: the fields the old version wrote and this one dropped must go", types, got.Status.RouteHost)
	}
	if n := writes.Load() - before; n != 3 {
		t.Errorf("%d writes, want 3 (apply, managed-fields upgrade, apply)", n)
	}
	for _, f := range got.ManagedFields {
		if f.Manager == "old-operator" && f.Subresource == "status" {
			t.Errorf("the old manager still owns status fields: %+v", f)
		}
	}
	before = writes.Load()
	write(t, w, got, func(s *ircv1.ErgoNetworkStatus) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "New", Message: "new"})
	})
	if n := writes.Load() - before; n != 1 {
		t.Errorf("%d writes once the fields are taken over, want 1", n)
	}
}

func TestStatusWriterGoneObject(t *testing.T) {
	c, _ := countingClient(t)
	n := newNetwork(t, c, newNamespace(t, c))
	live := read(t, c, n)
	if err := c.Delete(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	w := &StatusWriter{Client: c, FieldOwner: "test/network", Fields: []string{"networkName"}}
	write(t, w, live, func(s *ircv1.ErgoNetworkStatus) { s.NetworkName = "x" }) // fails the test on error
}

func TestSession(t *testing.T) {
	ctx := context.Background()
	c, _ := countingClient(t)
	ns := newNamespace(t, c)
	owner := read(t, c, newNetwork(t, c, ns))
	rec := record.NewFakeRecorder(16)
	var conds []metav1.Condition
	s := &Session{Owner: owner, Conditions: &conds, Client: c, Recorder: rec,
		Applier: &apply.Applier{Client: c, FieldOwner: "test"}}
	cm := func(name string, labels map[string]string, controlled bool) *corev1.ConfigMap {
		o := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: map[string]string{"k": "v"}}
		if controlled {
			o.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, ircv1.GroupVersion.WithKind("ErgoNetwork"))}
		}
		return o
	}

	for _, name := range []string{"a", "b"} {
		if ok, res, err := s.Apply(ctx, cm(name, nil, true), "ConfigReady"); !ok || err != nil || !res.IsZero() {
			t.Fatalf("apply %s: %v %+v %v", name, ok, res, err)
		}
	}
	ok, res, err := s.Apply(ctx, cm("bad", map[string]string{"x": "not a label value!"}, true), "ServiceReady")
	if ok || err != nil || res.RequeueAfter != RefusedRetry {
		t.Errorf("refused apply: %v %+v %v, want not applied, no error, a slow retry", ok, res, err)
	}
	if c := meta.FindStatusCondition(conds, "ServiceReady"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonApplyFailed ||
		!strings.Contains(c.Message, "ConfigMap bad") || c.ObservedGeneration != owner.Generation {
		t.Errorf("refused apply's condition: %+v", c)
	}
	s.Announce()
	s.MissingAPI("RouteReady", "no routes here")

	// The name of a child taken by an object the operator did not make: left alone, reported, retried.
	if err := c.Create(ctx, cm("users", map[string]string{"team": "a"}, false)); err != nil {
		t.Fatal(err)
	}
	s.Applier.Reader = c
	ok, res, err = s.Apply(ctx, cm("users", nil, true), "UsersReady")
	if ok || err != nil || res.RequeueAfter != ConflictRetry {
		t.Errorf("apply over a user's object: %v %+v %v, want not applied, no error, a retry", ok, res, err)
	}
	if c := meta.FindStatusCondition(conds, "UsersReady"); c == nil || c.Reason != ReasonNameConflict {
		t.Errorf("conflict's condition: %+v", c)
	}
	users := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "users"}, users); err != nil || len(users.OwnerReferences) != 0 || users.Labels["team"] != "a" {
		t.Errorf("the user's ConfigMap was changed: %+v, %v", users.ObjectMeta, err)
	}

	if err := c.Create(ctx, cm("theirs", nil, false)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "theirs", "never-made"} {
		if err := s.DeleteIfControlled(ctx, &corev1.ConfigMap{}, name); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the controlled ConfigMap is still there: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "theirs"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("a ConfigMap the owner does not control was touched: %v", err)
	}

	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	want := []string{
		"Warning ApplyFailed the API server refused ConfigMap bad",
		"Normal Created Created ConfigMap a, ConfigMap b",
		"Warning APINotAvailable no routes here",
		"Warning NameConflict ConfigMap users already exists and was not made by the operator",
		"Normal Deleted Deleted ConfigMap a: the spec no longer asks for it",
	}
	if len(events) != len(want) {
		t.Fatalf("events %q, want %d", events, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(events[i], want[i]) {
			t.Errorf("event %d = %q, want %q...", i, events[i], want[i])
		}
	}
}

// The Applier decodes the API server's answer straight into the typed object it applied (protobuf for a
// built-in kind), with no map in between: desired then holds what the server keeps (its defaults, UID,
// resourceVersion, the applied digest) and its TypeMeta, a dry run leaves it as it was, and the next
// apply of the same object is told unchanged with no request.
func TestApplierAnswerIntoDesired(t *testing.T) {
	ctx := context.Background()
	c, writes := countingClient(t)
	ns := newNamespace(t, c)
	owner := read(t, c, newNetwork(t, c, ns))
	a := &apply.Applier{Client: c, FieldOwner: "test"}
	svc := func() *corev1.Service {
		return &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s",
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, ircv1.GroupVersion.WithKind("ErgoNetwork"))}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "irc", Port: 6667, TargetPort: intstr.FromInt32(6667)}}}}
	}

	dry := svc()
	if _, err := a.ApplyWith(ctx, owner, dry, apply.Options{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if dry.UID != "" || dry.Spec.ClusterIP != "" || dry.Annotations != nil {
		t.Errorf("a dry run's answer reached desired: %+v", dry)
	}

	desired := svc()
	if res, err := a.Apply(ctx, owner, desired); err != nil || res != apply.Created {
		t.Fatalf("Apply = %s, %v; want Created", res, err)
	}
	live := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		t.Fatal(err)
	}
	if desired.UID != live.UID || desired.ResourceVersion != live.ResourceVersion || desired.Spec.ClusterIP == "" ||
		desired.Spec.ClusterIP != live.Spec.ClusterIP || desired.Spec.Ports[0].Protocol != corev1.ProtocolTCP ||
		desired.Annotations[apply.DigestAnnotation] == "" || desired.Annotations[apply.DigestAnnotation] != live.Annotations[apply.DigestAnnotation] {
		t.Errorf("desired does not hold the live Service:\n desired %+v\n live    %+v", desired, live)
	}
	if desired.Kind != "Service" || desired.APIVersion != "v1" {
		t.Errorf("desired lost its TypeMeta: %+v", desired.TypeMeta)
	}

	before := writes.Load()
	again := svc()
	if res, err := a.Apply(ctx, owner, again); err != nil || res != apply.Unchanged {
		t.Errorf("the same Service again: %s, %v; want Unchanged", res, err)
	}
	if n := writes.Load() - before; n != 0 {
		t.Errorf("the same Service again cost %d writes", n)
	}
	if again.UID != live.UID || again.Spec.ClusterIP != live.Spec.ClusterIP {
		t.Errorf("an unchanged Service does not hold the live one: %+v", again)
	}
}
