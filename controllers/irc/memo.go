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

// secretMemo is the one value the reconciler needs from each Secret a network reads, with that Secret's
// resourceVersion, so that an unchanged Secret costs no read, and what the config step made of the
// network's generation (configMemo). A network's entry goes when the network does. (The status writer remembers the last status write; see reconcile.StatusWriter.)
type secretMemo struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*netMemo
}

type netMemo struct {
	oper, tls secretValue
	config    configMemo
	pod       podMemo
}

// podMemo is the pod template's config digest as last computed, with what it was computed from: the
// config digest's state after ircd.yaml, the oper hash, and the TLS Secret's resourceVersion. The
// certificate itself (1.3 KiB) is not kept: while all three hold, the digest is this one, and any change
// reads the certificate again.
type podMemo struct {
	prefix, oper []byte
	tlsVersion   string
	digest       string
}

// configMemo is what the config step made of one generation of a network: the applied digest of its
// ConfigMap and the config digest's state after the rendered ircd.yaml (about 100 bytes in place of the
// 5 KiB config). The rendered config depends on the network's spec (its generation), name and UID, and on
// whether it has an oper, nothing else.
type configMemo struct {
	uid        types.UID
	generation int64
	withOper   bool
	digest     string
	prefix     []byte
}

// matches says whether m was made for this generation of n.
func (m configMemo) matches(n client.Object, withOper bool) bool {
	return m.digest != "" && m.uid == n.GetUID() && m.generation == n.GetGeneration() && m.withOper == withOper
}

// config returns the config memo of the network key.
func (m *secretMemo) config(key types.NamespacedName) (configMemo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	if !ok {
		return configMemo{}, false
	}
	return e.config, true
}

func (m *secretMemo) setConfig(key types.NamespacedName, c configMemo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entry(key).config = c
}

// secretValue is one key of one Secret as read at resourceVersion, or the Secret's absence.
type secretValue struct {
	name, key, resourceVersion string
	value                      []byte
	hasKey                     bool
	missing                    bool // the cache and then the API server said the Secret does not exist
	dropped                    bool // value was not kept (see podMemo): a read asks the API server again
}

func (m *secretMemo) entry(key types.NamespacedName) *netMemo {
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

func (m *secretMemo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}

func (m *secretMemo) pod(key types.NamespacedName) podMemo {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.m[key]; ok {
		return e.pod
	}
	return podMemo{}
}

// setPod remembers the pod digest p, computed from the TLS certificate the network's entry holds, with
// that Secret's resourceVersion, and drops the certificate.
func (m *secretMemo) setPod(key types.NamespacedName, p podMemo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(key)
	p.tlsVersion = e.tls.resourceVersion
	e.pod = p
	if e.tls.value != nil {
		e.tls.value, e.tls.dropped = nil, true
	}
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
func (r *ErgoNetworkReconciler) readSecretKey(ctx context.Context, s *ergoNetworkScope, slot secretSlot, name, key string) ([]byte, bool, error) {
	nsName := types.NamespacedName{Namespace: s.net.Namespace, Name: name}
	netKey := client.ObjectKeyFromObject(s.net)
	r.secrets.mu.Lock()
	known := *slot(r.secrets.entry(netKey))
	r.secrets.mu.Unlock()
	remember := func(v secretValue) {
		r.secrets.mu.Lock()
		*slot(r.secrets.entry(netKey)) = v
		r.secrets.mu.Unlock()
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
	case known.name == name && known.key == key && !known.missing && !known.dropped && known.resourceVersion == meta.ResourceVersion:
		return known.value, known.hasKey, nil
	}

	if known.name == "" && meta.ResourceVersion != "" && primeable(s.net, r.started) {
		// Nothing remembered of a network that converged before: the operator just started.
		// The list kept only the keys networks named then: a key it lacks is read on its own.
		if primed := r.primedSecret(ctx, s.net.Namespace, name); primed != nil && primed.ResourceVersion == meta.ResourceVersion {
			if value, ok := primed.Data[key]; ok {
				remember(secretValue{name: name, key: key, resourceVersion: primed.ResourceVersion, value: value, hasKey: true})
				return value, true, nil
			}
		}
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
