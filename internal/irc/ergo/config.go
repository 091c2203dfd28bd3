package ergo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
)

// RenderConfig marshals c to YAML. Output is deterministic: struct fields and map keys come out
// sorted. The document is parsed back and compared before it is returned, so a value YAML cannot carry
// unchanged fails here instead of reaching ergo as a different config.
func RenderConfig(c *Config) ([]byte, error) {
	// sigs.k8s.io/yaml goes through JSON; the JSON is escaped first so the YAML reader that turns it
	// into YAML never meets a character it refuses.
	j, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("render ergo config: %w", err)
	}
	out, err := yaml.JSONToYAML(escapeYAMLForbidden(j))
	if err != nil {
		return nil, fmt.Errorf("render ergo config: %w", err)
	}
	var back Config
	if err := yaml.UnmarshalStrict(out, &back); err != nil {
		return nil, fmt.Errorf("render ergo config: rendered YAML does not parse: %w", err)
	}
	if !reflect.DeepEqual(&back, c) {
		return nil, fmt.Errorf("render ergo config: rendered YAML does not read back as the config it was made from")
	}
	return out, nil
}

// escapeYAMLForbidden rewrites, as \uXXXX escapes, the characters encoding/json leaves raw but a YAML
// reader rejects in its input (DEL, the C1 controls, U+FFFE and U+FFFF; JSON already escapes C0
// controls). Outside strings JSON is plain ASCII, so only string contents change, and they decode to
// the same text; the YAML emitter then writes those characters as escapes in double quotes.
func escapeYAMLForbidden(j []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(j))
	for _, r := range string(j) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfffe || r == 0xffff {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.Bytes()
}

// ConfigDigest identifies what a running ergo was started with: the rendered config, the oper password
// hash (which reaches ergo through an environment variable and so does not change the ConfigMap) and the
// serving certificate (ergo reads it only at start, so a certificate cert-manager renewed must restart
// it). Each part is length-prefixed so bytes cannot move between them unnoticed.
func ConfigDigest(rendered, operHash, tlsCert []byte) string {
	return ircnet.Digest(rendered, operHash, tlsCert)
}

// ConfigDigestPrefix is ConfigDigest's state after the rendered config: about 100 bytes to keep instead
// of the config, which ConfigDigestFrom finishes into the same digest.
func ConfigDigestPrefix(rendered []byte) []byte { return ircnet.DigestPrefix(rendered) }

// ConfigDigestFrom is ConfigDigest(rendered, operHash, tlsCert) from ConfigDigestPrefix(rendered).
func ConfigDigestFrom(prefix, operHash, tlsCert []byte) (string, error) {
	return ircnet.DigestFrom(prefix, operHash, tlsCert)
}
