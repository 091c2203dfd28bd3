package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxIdentifierLength is PostgreSQL's limit on a name, in bytes (NAMEDATALEN - 1).
const MaxIdentifierLength = 63

// hashLength is the number of hex digits of the hash every derived name ends in.
const hashLength = 10

// Name is the database and role name for the object namespace/name: both sanitized (lowercase letters,
// digits and '_'; anything else becomes '_'), joined by '_', cut so that the whole fits in 63 bytes, and
// ending in '_' and the first 10 hex digits of the SHA-256 of "namespace/name". Sanitizing alone maps
// a-b/c and a/b-c to the same text; the hash of the exact pair keeps them apart.
func Name(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	suffix := "_" + hex.EncodeToString(sum[:])[:hashLength]
	base := sanitize(namespace) + "_" + sanitize(name)
	if limit := MaxIdentifierLength - len(suffix); len(base) > limit {
		base = base[:limit]
	}
	return base + suffix
}

// sanitize keeps lowercase letters and digits and turns everything else into '_'. The result is ASCII,
// so cutting it at any byte is safe.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// SecretName is the name of the Secret holding a PostgresDatabase's credentials.
func SecretName(database string) string { return database + "-postgres" }

// ParseRef splits a reference written as "name" or "namespace/name"; a bare name is in defaultNamespace.
func ParseRef(ref, defaultNamespace string) (namespace, name string, err error) {
	ns, n, found := strings.Cut(ref, "/")
	if !found {
		return defaultNamespace, ref, nil
	}
	if ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("reference %q is neither name nor namespace/name", ref)
	}
	return ns, n, nil
}
