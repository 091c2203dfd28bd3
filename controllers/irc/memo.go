package irc

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// memo is what the reconciler remembers about each network between reconciles, so that an unchanged
// network costs neither a write nor a read: its last status write, and the one value it needs from each
// Secret it reads, with that Secret's resourceVersion. A network's entry goes when the network does.
type memo struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*netMemo
}

type netMemo struct {
	status    statusWrite
	oper, tls secretValue
}

// statusWrite is one status write: the status it replaced and the one it wrote, as statusDigests.
type statusWrite struct {
	uid           types.UID
	before, after uint64
}

// secretValue is one key of one Secret as read at resourceVersion, or the Secret's absence.
type secretValue struct {
	name, key, resourceVersion string
	value                      []byte
	hasKey                     bool
	missing                    bool // the cache and then the API server said the Secret does not exist
}

func (m *memo) entry(key types.NamespacedName) *netMemo {
	if m.m == nil {
		m.m = map[types.NamespacedName]*netMemo{}
	}
	e := m.m[key]
	if e == nil {
		e = &netMemo{}
		m.m[key] = e
	}
	return e
}

// statusLagging says whether w repeats the network's last status write: the cache still shows the
// status that write replaced, and the desired status is the one it wrote. Children's events wake the
// next reconcile up within milliseconds of a write, often before the network's own watch event has
// reached the cache; without this that reconcile would send the same status again.
func (m *memo) statusLagging(key types.NamespacedName, w statusWrite) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	return ok && e.status == w
}

func (m *memo) rememberStatus(key types.NamespacedName, w statusWrite) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entry(key).status = w
}

func (m *memo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}

// secretSlot picks which of a network's remembered Secret values a read uses.
type secretSlot func(*netMemo) *secretValue

func operSlot(e *netMemo) *secretValue { return &e.oper }
func tlsSlot(e *netMemo) *secretValue  { return &e.tls }

// readSecretKey returns key of Secret name in the network's namespace, and whether the Secret has that
// key; a missing Secret is a NotFound error. The Secret's metadata comes from the cache (every Secret is
// watched as metadata only), and its data from the API server only when its resourceVersion differs from
// the one remembered: an unchanged Secret costs no request, a changed one is read once. A Secret missing
// from the cache is asked for once (the cache may not have seen it yet); once the API server has agreed
// it is missing, its creation is an event that brings the network back here.
func (r *ErgoNetworkReconciler) readSecretKey(ctx context.Context, s *scope, slot secretSlot, name, key string) ([]byte, bool, error) {
	nsName := types.NamespacedName{Namespace: s.net.Namespace, Name: name}
	netKey := client.ObjectKeyFromObject(s.net)
	r.memo.mu.Lock()
	known := *slot(r.memo.entry(netKey))
	r.memo.mu.Unlock()
	remember := func(v secretValue) {
		r.memo.mu.Lock()
		*slot(r.memo.entry(netKey)) = v
		r.memo.mu.Unlock()
	}

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	switch err := r.Client.Get(ctx, nsName, meta); {
	case apierrors.IsNotFound(err):
		if known.name == name && known.key == key && known.missing {
			return nil, false, apierrors.NewNotFound(corev1.Resource("secrets"), name)
		}
	case err != nil:
		return nil, false, err
	case known.name == name && known.key == key && !known.missing && known.resourceVersion == meta.ResourceVersion:
		return known.value, known.hasKey, nil
	}

	var secret corev1.Secret
	if err := r.APIReader.Get(ctx, nsName, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			remember(secretValue{name: name, key: key, missing: true})
		}
		return nil, false, err
	}
	value, hasKey := secret.Data[key]
	remember(secretValue{name: name, key: key, resourceVersion: secret.ResourceVersion, value: value, hasKey: hasKey})
	return value, hasKey, nil
}
