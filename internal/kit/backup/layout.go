package backup

import (
	"errors"
	"fmt"
	"path"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// Ref names one artifact: the source object (namespace, kind, name) and the backup's id.
type Ref struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	ID        string `json:"id"`
}

// The two objects of an artifact, under its directory.
const (
	dataObject     = "data"
	manifestObject = "manifest.json"
)

// Validate checks every part of the ref as one segment of a key, so the artifact's keys stay inside its
// namespace's directory.
func (r Ref) Validate() error {
	var errs []error
	for _, p := range []struct{ what, v string }{{"namespace", r.Namespace}, {"kind", r.Kind}, {"name", r.Name}, {"backup id", r.ID}} {
		if err := objectstore.ValidSegment(p.v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.what, err))
		}
	}
	return errors.Join(errs...)
}

// String is the artifact's path under the store's prefix: <namespace>/<kind>/<name>/<id>.
func (r Ref) String() string { return path.Join(r.Namespace, r.Kind, r.Name, r.ID) }

// dir is the artifact's directory relative to its namespace: <kind>/<name>/<id>.
func (r Ref) dir() string { return path.Join(r.Kind, r.Name, r.ID) }

// DataKey is the data object's key relative to the namespace.
func (r Ref) DataKey() string { return r.dir() + "/" + dataObject }

// ManifestKey is the manifest's key relative to the namespace.
func (r Ref) ManifestKey() string { return r.dir() + "/" + manifestObject }
