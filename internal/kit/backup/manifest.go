package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Format is what the data object holds.
type Format string

const (
	// FormatPgDumpCustom is pg_dump's custom format (pg_dump -Fc), which pg_restore reads.
	FormatPgDumpCustom Format = "pg_dump-custom"
	// FormatBuntDB is a buntdb file, ergo's datastore (ircd.db).
	FormatBuntDB Format = "buntdb"
)

// formats are the formats an artifact may have.
var formats = map[Format]bool{FormatPgDumpCustom: true, FormatBuntDB: true}

// ManifestVersion is the version of the manifest's schema this program writes and reads.
const ManifestVersion = 1

// Manifest describes a complete artifact. It is written after the data object, so its presence is what
// makes the artifact complete.
type Manifest struct {
	// Version is the manifest's schema version (ManifestVersion).
	Version int `json:"version"`
	Ref
	// Format is what the data object holds.
	Format Format `json:"format"`
	// ToolVersion is the version of the tool that produced the data (pg_dump's, ergo's), as the caller
	// gives it.
	ToolVersion string `json:"toolVersion,omitempty"`
	// Started is when the upload of the data began; Completed when it ended (before the manifest was
	// written).
	Started   time.Time `json:"started"`
	Completed time.Time `json:"completed"`
	// Size is the data object's size in bytes.
	Size int64 `json:"size"`
	// SHA256 is the data's SHA-256, lowercase hex.
	SHA256 string `json:"sha256"`
	// Facts are what the producer knew about the data, per kind (a dump's table of contents and row
	// counts, a datastore's account count), for a drill to compare against.
	Facts map[string]string `json:"facts,omitempty"`
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Validate checks that a manifest read from the store is one this program wrote for ref.
func (m Manifest) Validate(ref Ref) error {
	var errs []error
	if m.Version != ManifestVersion {
		errs = append(errs, fmt.Errorf("manifest version %d, this program reads %d", m.Version, ManifestVersion))
	}
	if m.Ref != ref {
		errs = append(errs, fmt.Errorf("manifest is of %s, not %s", m.Ref, ref))
	}
	if !formats[m.Format] {
		errs = append(errs, fmt.Errorf("format %q is unknown", m.Format))
	}
	if m.Size < 0 {
		errs = append(errs, fmt.Errorf("size %d is negative", m.Size))
	}
	if !sha256Hex.MatchString(m.SHA256) {
		errs = append(errs, errors.New("sha256 is not 64 lowercase hex digits"))
	}
	return errors.Join(errs...)
}

func parseManifest(data []byte, ref Ref) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("manifest of %s: %w", ref, err)
	}
	if err := m.Validate(ref); err != nil {
		return m, fmt.Errorf("manifest of %s: %w", ref, err)
	}
	return m, nil
}
