// Package retry holds how soon the operator tries again after a refusal that no fast retry fixes. It is a
// leaf (it imports only time), so clients such as internal/postgres return the kit's retry intervals
// without pulling in internal/kit/reconcile and, through it, controller-runtime's manager.
package retry

import "time"

// Refused is how soon an owner whose child the API server (or a server the operator provisions on)
// refused is tried again: the refusal comes from the spec (a spec change retries at once) or from the
// cluster's policy (RBAC, admission, a storage class made expandable, a role's privileges), which no
// fast retry fixes.
const Refused = 5 * time.Minute

// Conflict is how soon an owner whose child's name is taken is tried again: the object in the way is
// not the operator's, so its deletion sends no event the operator sees.
const Conflict = time.Minute
