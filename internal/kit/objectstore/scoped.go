package objectstore

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Scoped is a Store handle for one namespace: every key it takes is relative to <prefix>/<namespace>/ and
// is checked (validKey) before any request, so no key it is given reaches another namespace's backups.
type Scoped struct {
	store     *Store
	namespace string
}

// Scope returns the handle for namespace.
func (s *Store) Scope(namespace string) (*Scoped, error) {
	if err := validSegment(namespace); err != nil {
		return nil, fmt.Errorf("namespace %q: %w", namespace, err)
	}
	return &Scoped{store: s, namespace: namespace}, nil
}

// Namespace is the namespace the handle is for.
func (h *Scoped) Namespace() string { return h.namespace }

// key is the store key of a key relative to the namespace, or ErrOutsideScope.
func (h *Scoped) key(rel string) (string, error) {
	if err := validKey(rel); err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrOutsideScope, h.namespace, err)
	}
	full := h.namespace + "/" + rel
	// validKey allows no "." or ".." segment, so full cannot leave the namespace; checked again so that a
	// later change to validKey cannot open the way silently.
	if !strings.HasPrefix(full, h.namespace+"/") || strings.Contains("/"+full+"/", "/../") {
		return "", fmt.Errorf("%w %q: key %q", ErrOutsideScope, h.namespace, rel)
	}
	return full, nil
}

// Put is Store.Put for a key relative to the namespace.
func (h *Scoped) Put(ctx context.Context, rel string, r io.Reader, contentType string) (int64, error) {
	k, err := h.key(rel)
	if err != nil {
		return 0, err
	}
	return h.store.Put(ctx, k, r, contentType)
}

// PutBytes is Store.PutBytes for a key relative to the namespace.
func (h *Scoped) PutBytes(ctx context.Context, rel string, data []byte, contentType string) error {
	k, err := h.key(rel)
	if err != nil {
		return err
	}
	return h.store.PutBytes(ctx, k, data, contentType)
}

// Get is Store.Get for a key relative to the namespace.
func (h *Scoped) Get(ctx context.Context, rel string) (io.ReadCloser, error) {
	k, err := h.key(rel)
	if err != nil {
		return nil, err
	}
	return h.store.Get(ctx, k)
}

// Size is Store.Size for a key relative to the namespace.
func (h *Scoped) Size(ctx context.Context, rel string) (int64, error) {
	k, err := h.key(rel)
	if err != nil {
		return 0, err
	}
	return h.store.Size(ctx, k)
}

// Delete is Store.Delete for a key relative to the namespace.
func (h *Scoped) Delete(ctx context.Context, rel string) error {
	k, err := h.key(rel)
	if err != nil {
		return err
	}
	return h.store.Delete(ctx, k)
}

// List is Store.List under a prefix relative to the namespace; the keys it returns are relative to the
// namespace too.
func (h *Scoped) List(ctx context.Context, relPrefix string) ([]string, error) {
	k, err := h.key(relPrefix)
	if err != nil {
		return nil, err
	}
	keys, err := h.store.List(ctx, k)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		keys[i] = strings.TrimPrefix(keys[i], h.namespace+"/")
	}
	return keys, nil
}
