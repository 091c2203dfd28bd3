package irc

import (
	"context"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/testutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

func TestReadSecretKey(t *testing.T) {
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "oper"}, Data: map[string][]byte{"password": []byte("v1")}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(secret).Build()
	api := &testutil.CountingReader{Reader: c}
	r := &ErgoNetworkReconciler{Client: c, APIReader: api}
	s := r.newErgoNetworkScope(&ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "net"}})

	steps := []struct {
		name     string
		change   func()
		key      string
		want     string
		hasKey   bool
		notFound bool
		gets     int // API server reads this step
	}{
		{name: "first read asks the API server", key: "password", want: "v1", hasKey: true, gets: 1},
		{name: "an unchanged Secret is not read again", key: "password", want: "v1", hasKey: true, gets: 0},
		{name: "another key is read", key: "other", hasKey: false, gets: 1},
		{name: "changed Secret (new resourceVersion) is read once", key: "password", want: "v2", hasKey: true, gets: 1,
			change: func() {
				secret.Data["password"] = []byte("v2")
				if err := c.Update(ctx, secret); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "and then served from memory", key: "password", want: "v2", hasKey: true, gets: 0},
		{name: "a deleted Secret is confirmed missing by the API server", key: "password", notFound: true, gets: 1,
			change: func() {
				if err := c.Delete(ctx, secret); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "and not asked for again while it stays missing", key: "password", notFound: true, gets: 0},
	}
	for _, st := range steps {
		if st.change != nil {
			st.change()
		}
		before := api.Gets
		got, hasKey, err := r.readSecretKey(ctx, s, operSlot, "oper", st.key)
		if st.notFound != apierrors.IsNotFound(err) || (!st.notFound && err != nil) {
			t.Fatalf("%s: err = %v, want NotFound %v", st.name, err, st.notFound)
		}
		if string(got) != st.want || hasKey != st.hasKey {
			t.Errorf("%s: got %q (has key %v), want %q (%v)", st.name, got, hasKey, st.want, st.hasKey)
		}
		if n := api.Gets - before; n != st.gets {
			t.Errorf("%s: %d API reads, want %d", st.name, n, st.gets)
		}
	}
}

func TestSecretIdentity(t *testing.T) {
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "s", Namespace: "ns", UID: "u", ResourceVersion: "9",
			Labels:          map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName, oplabels.InstanceLabel: "net", "team": "a"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"c2VjcmV0"}}`},
			OwnerReferences: []metav1.OwnerReference{{Name: "o"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			Finalizers:      []string{"f"},
		},
	}
	out, err := secretIdentity(in)
	if err != nil {
		t.Fatal(err)
	}
	m := out.(*metav1.PartialObjectMetadata)
	want := metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "u", ResourceVersion: "9",
		Labels: map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName, oplabels.InstanceLabel: "net"}}
	if m.Name != want.Name || m.Namespace != want.Namespace || m.UID != want.UID || m.ResourceVersion != want.ResourceVersion ||
		len(m.Labels) != 2 || m.Labels[oplabels.InstanceLabel] != "net" || m.Annotations != nil || m.OwnerReferences != nil ||
		m.ManagedFields != nil || m.Finalizers != nil || m.Kind != "Secret" {
		t.Errorf("secretIdentity kept %+v, want %+v", m.ObjectMeta, want)
	}
	unlabelled, _ := secretIdentity(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}}})
	if l := unlabelled.(*metav1.PartialObjectMetadata).Labels; l != nil {
		t.Errorf("labels of an unrelated Secret kept: %v", l)
	}
	typed := &corev1.Secret{}
	if got, _ := secretIdentity(typed); got != typed {
		t.Error("a typed Secret should pass through")
	}
}

func TestPrimeable(t *testing.T) {
	started := time.Date(2026, 11, 23, 14, 0, 30, 500_000_000, time.UTC)
	at := func(d time.Duration) metav1.Condition {
		return metav1.Condition{Type: "Ready", LastTransitionTime: metav1.NewTime(started.Add(d).Truncate(time.Second))}
	}
	network := func(generation, observed int64, conds ...metav1.Condition) *ircv1.ErgoNetwork {
		n := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Generation: generation}}
		n.Status.ObservedGeneration, n.Status.Conditions = observed, conds
		return n
	}
	tests := []struct {
		name string
		net  *ircv1.ErgoNetwork
		want bool
	}{
		{"converged under an earlier process", network(2, 2, at(-time.Hour), at(-time.Minute)), true},
		{"a new network, no status yet", network(1, 0), false},
		{"a spec change not yet observed", network(3, 2, at(-time.Hour)), false},
		{"observed, but no conditions", network(2, 2), false},
		{"a condition changed by this process", network(2, 2, at(-time.Hour), at(time.Second)), false},
		{"a condition of the second the process started", network(2, 2, at(-400*time.Millisecond)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := primeable(tt.net, started); got != tt.want {
				t.Errorf("primeable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodDigest(t *testing.T) {
	ctx := context.Background()
	net := ergotest.FullNetwork("ns", "net", "irc.example")
	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: ergo.TLSSecretName(net)},
		Data: map[string][]byte{corev1.TLSCertKey: []byte("cert-1")}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tls).Build()
	api := &testutil.CountingReader{Reader: c}
	r := &ErgoNetworkReconciler{Client: c, APIReader: api}
	s := r.newErgoNetworkScope(net)
	s.configPrefix, s.operHash = ergo.ConfigDigestPrefix([]byte("config-1")), []byte("oper-1")

	steps := []struct {
		name   string
		change func()
		cert   string
		gets   int // API server reads this step
	}{
		{name: "first digest reads the certificate", cert: "cert-1", gets: 1},
		{name: "unchanged: remembered, nothing read", cert: "cert-1", gets: 0},
		{name: "a new config reads the certificate again", cert: "cert-1", gets: 1,
			change: func() { s.configPrefix = ergo.ConfigDigestPrefix([]byte("config-2")) }},
		{name: "a new oper hash too", cert: "cert-1", gets: 1, change: func() { s.operHash = []byte("oper-2") }},
		{name: "a renewed certificate is read", cert: "cert-2", gets: 1,
			change: func() {
				tls.Data[corev1.TLSCertKey] = []byte("cert-2")
				if err := c.Update(ctx, tls); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "and then remembered", cert: "cert-2", gets: 0},
	}
	for _, st := range steps {
		if st.change != nil {
			st.change()
		}
		before := api.Gets
		got, err := r.podDigest(ctx, s)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		want, _ := ergo.ConfigDigestFrom(s.configPrefix, s.operHash, []byte(st.cert))
		if got != want {
			t.Errorf("%s: digest %s, want the digest with %s: %s", st.name, got, st.cert, want)
		}
		if n := api.Gets - before; n != st.gets {
			t.Errorf("%s: %d API reads, want %d", st.name, n, st.gets)
		}
		if kept := r.secrets.m[client.ObjectKeyFromObject(net)].tls.value; kept != nil {
			t.Errorf("%s: the certificate is kept in memory (%q)", st.name, kept)
		}
	}
}
