package irc

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
)

// primeTTL is how long the Secrets one list read stay at hand for the networks of their namespace.
const primeTTL = time.Minute

// primeListPage bounds each page of the list.
const primeListPage = 500

// secretPrimer serves the first Secret reads after the operator starts. The values the reconciler needs
// from Secrets (secretMemo) live only in memory, so a restart would read two Secrets per network from the
// API server, one request each: at the client's rate limit, that is what bounds the resync. Instead, the
// first such read in a namespace lists the namespace's Secrets once, keeps those that a network of the
// namespace names (its oper Secret) or that are a network's TLS Secret, and answers the other networks'
// first reads from them for primeTTL. Only networks that converged before (observedGeneration is their
// generation) ask: a new network's Secret is read on its own, as before.
type secretPrimer struct {
	mu sync.Mutex
	ns map[string]*primed
}

// primed is one namespace's list: done closes when it was read.
type primed struct {
	done    chan struct{}
	secrets map[string]*corev1.Secret
	err     error
}

// primeable says whether a network's first Secret reads go through the primer: it converged under an
// earlier operator process (its status observes its generation, and none of its conditions changed since
// started, when this process began), so this is a resync after a start. A network made or changed since
// reads its Secrets on its own: a network whose first reconcile stopped early would otherwise have its
// whole namespace listed, and held for primeTTL, while the other networks there already know their values.
func primeable(n *ircv1.ErgoNetwork, started time.Time) bool {
	if n.Generation == 0 || n.Status.ObservedGeneration != n.Generation || len(n.Status.Conditions) == 0 {
		return false
	}
	// Condition times have second precision: a condition of the second the process started may be its own.
	before := started.Truncate(time.Second)
	for _, c := range n.Status.Conditions {
		if !c.LastTransitionTime.Time.Before(before) {
			return false
		}
	}
	return true
}

// primedSecret returns Secret name of namespace ns as the namespace's list read it, or nil when the list did not
// keep it (the caller reads it on its own). The first call for a namespace lists it; calls meanwhile wait.
func (r *ErgoNetworkReconciler) primedSecret(ctx context.Context, ns, name string) *corev1.Secret {
	p := &r.primer
	p.mu.Lock()
	if p.ns == nil {
		p.ns = map[string]*primed{}
	}
	e, ok := p.ns[ns]
	if !ok {
		e = &primed{done: make(chan struct{})}
		p.ns[ns] = e
		p.mu.Unlock()
		ctrl.LoggerFrom(ctx).V(1).Info("listing the namespace's Secrets once for the networks' first reads after the start", "namespace", ns)
		e.secrets, e.err = r.listWanted(ctx, ns)
		close(e.done)
		time.AfterFunc(primeTTL, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			// The entry stays, empty, so the namespace is not listed again.
			e.secrets = nil
		})
	} else {
		p.mu.Unlock()
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.err != nil {
		return nil
	}
	return e.secrets[name]
}

// listWanted lists the namespace's Secrets from the API server, page by page, and keeps those a network
// in the namespace reads.
func (r *ErgoNetworkReconciler) listWanted(ctx context.Context, ns string) (map[string]*corev1.Secret, error) {
	var nets ircv1.ErgoNetworkList
	if err := r.Client.List(ctx, &nets, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	// Of each wanted Secret, only the keys read: a TLS Secret's private key is never kept.
	wanted := map[string]map[string]bool{}
	want := func(name, key string) {
		if wanted[name] == nil {
			wanted[name] = map[string]bool{}
		}
		wanted[name][key] = true
	}
	for i := range nets.Items {
		n := &nets.Items[i]
		if ref := n.Spec.OperCredentials; ref != nil {
			key := ref.Key
			if key == "" {
				key = ircv1.DefaultOperSecretKey
			}
			want(ref.SecretName, key)
		}
		if n.Spec.TLS != nil {
			want(ergo.TLSSecretName(n), corev1.TLSCertKey)
		}
	}
	out := map[string]*corev1.Secret{}
	opts := []client.ListOption{client.InNamespace(ns), client.Limit(primeListPage)}
	for {
		var list corev1.SecretList
		if err := r.APIReader.List(ctx, &list, opts...); err != nil {
			return nil, err
		}
		for i := range list.Items {
			s := &list.Items[i]
			keys := wanted[s.Name]
			if keys == nil {
				continue
			}
			kept := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, ResourceVersion: s.ResourceVersion},
				Data: map[string][]byte{}}
			for k := range keys {
				if v, ok := s.Data[k]; ok {
					kept.Data[k] = v
				}
			}
			out[s.Name] = kept
		}
		if list.Continue == "" {
			return out, nil
		}
		opts = []client.ListOption{client.InNamespace(ns), client.Limit(primeListPage), client.Continue(list.Continue)}
	}
}
