package objectstore

import (
	"errors"
	"fmt"
	"strings"
)

// maxKey is S3's limit on a key's length in bytes.
const maxKey = 1024

// validKey checks a key (or a prefix) the operator builds: segments separated by single slashes, each
// beginning with a letter or digit and holding only letters, digits, '.', '_' and '-'. That leaves out
// everything a store, a proxy or an HTTP library could read as another path: empty, "." and ".." segments,
// leading and trailing slashes, backslashes, percent-encoding ("%2e%2e", "%2f"), control characters and
// non-ASCII look-alikes (fullwidth dots and slashes). Kubernetes names, kinds and backup ids all fit.
func validKey(key string) error {
	if key == "" {
		return errors.New("key is empty")
	}
	if len(key) > maxKey {
		return fmt.Errorf("key is %d bytes long, over S3's %d", len(key), maxKey)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if err := validSegment(seg); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
	}
	return nil
}

// validSegment checks one slash-free part of a key.
func validSegment(seg string) error {
	if seg == "" {
		return errors.New("empty segment (a leading, trailing or doubled slash)")
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum || i > 0 && (c == '.' || c == '_' || c == '-') {
			continue
		}
		return fmt.Errorf("segment %q: byte %q at %d is not allowed (segments begin with a letter or digit and hold only letters, digits, '.', '_', '-')", seg, c, i)
	}
	return nil
}

// ValidSegment reports whether seg may be one segment of a key (a namespace, kind, name or backup id).
func ValidSegment(seg string) error { return validSegment(seg) }
