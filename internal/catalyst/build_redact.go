package catalyst

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Redacted is what Redact puts in place of a credential.
const Redacted = "[REDACTED]"

// MinSecretLength is the shortest Secret value Redact replaces wherever it appears: a shorter one would
// blank out ordinary words and numbers of the log (and is guessed faster than read anyway).
const MinSecretLength = 4

// The credential shapes Redact knows, besides the literal values it is given.
var (
	// scheme://user:password@host and scheme://token@host: the whole userinfo goes.
	urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@"']+@`)
	// Authorization: <scheme> <credentials>, as a header, a JSON key or key=value.
	authorizationHeader = regexp.MustCompile(`(?i)(\bauthorization"?\s*[:=]\s*"?(?:(?:basic|bearer|token|digest)\s+)?)[^\s",;]+`)
	// Basic <base64> and Bearer <token> anywhere else (checked by looksSecret: "Basic authentication"
	// stays).
	authScheme = regexp.MustCompile(`(?i)\b(basic|bearer)(\s+)([A-Za-z0-9._~+/-]{8,}=*)`)
	// GitHub (classic and fine-grained) and GitLab tokens, by their documented prefixes.
	forgeToken = regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,})`)
	// key=value and "key": "value" where the key names a password, token, secret or key; "auth" (a
	// Docker config's) only as a whole key.
	secretKeyValue = regexp.MustCompile(`(?i)(\b(?:[a-z0-9_.-]*(?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key|private[_-]?key)[a-z0-9_.-]*|auth)"?)(\s*)([=:])(\s*)("[^"]*"|'[^']*'|[^\s,;&"'\]}]+)`)
	// JSON web tokens: a base64url JSON header ({" is eyJ) and its dotted parts.
	jwt = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]+){0,2}`)
	// Runs of base64 characters, judged by secretBlob.
	base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)
)

// Redact is s with everything that looks like a credential replaced by Redacted: the literal values
// given (at least MinSecretLength long; the values of the Secrets a build uses), a URL's userinfo,
// Authorization values and Basic/Bearer credentials, GitHub and GitLab tokens, the values of keys naming
// a password, token, secret or key, JSON web tokens, and long base64 blobs (a Docker config's auth) other
// than hexadecimal ones (commit ids and digests stay). What it cannot recognize, it leaves: it is a
// second line behind keeping credentials out of logs in the first place.
func Redact(s string, secrets []string) string {
	if s == "" {
		return s
	}
	lits := slices.Clone(secrets)
	// Longest first: a value that contains another goes whole.
	slices.SortFunc(lits, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, v := range lits {
		if len(v) >= MinSecretLength {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	s = urlUserinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = authorizationHeader.ReplaceAllString(s, "${1}"+Redacted)
	s = replaceSubmatches(authScheme, s, func(m []string) string {
		if !looksSecret(m[3]) {
			return m[0]
		}
		return m[1] + m[2] + Redacted
	})
	s = forgeToken.ReplaceAllString(s, Redacted)
	s = jwt.ReplaceAllString(s, Redacted)
	s = replaceSubmatches(secretKeyValue, s, func(m []string) string {
		value := m[5]
		quoted := strings.HasPrefix(value, `"`) || strings.HasPrefix(value, `'`)
		// "error getting token: unexpected status" is prose, not a credential: after a colon and a
		// blank, an unquoted value must look like one.
		if m[3] == ":" && m[4] != "" && !quoted && !looksSecret(value) {
			return m[0]
		}
		if strings.Contains(value, Redacted[:len(Redacted)-1]) {
			return m[0]
		}
		if quoted {
			return m[1] + m[2] + m[3] + m[4] + value[:1] + Redacted + value[:1]
		}
		return m[1] + m[2] + m[3] + m[4] + Redacted
	})
	var b strings.Builder
	last := 0
	for _, loc := range base64Run.FindAllStringIndex(s, -1) {
		if secretBlob(s, loc[0], loc[1]) {
			b.WriteString(s[last:loc[0]])
			b.WriteString(Redacted)
			last = loc[1]
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// secretBlob says whether s[start:end], a run of base64 characters, is a credential rather than a word,
// a path, an identifier or a hexadecimal id: it mixes upper and lower case letters and digits, and is
// either padded (at least 16 characters, not followed by a letter or digit, which would make it a
// KEY=value) or at least 24 characters long without a '/' (a path).
func secretBlob(s string, start, end int) bool {
	run := s[start:end]
	body := strings.TrimRight(run, "=")
	padded := len(body) < len(run)
	if padded && end < len(s) && isAlnum(s[end]) {
		return false
	}
	if !padded && (len(run) < 24 || strings.Contains(run, "/")) {
		return false
	}
	return mixed(body)
}

// looksSecret says whether a word looks like a generated credential rather than prose: it holds a digit,
// or upper and lower case letters, or a symbol of base64.
func looksSecret(w string) bool {
	var upper, lower, digit, symbol bool
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		case c == '+' || c == '/' || c == '=' || c == '_':
			symbol = true
		}
	}
	return digit || (upper && lower) || symbol
}

// mixed says whether w holds upper and lower case letters and digits (which no hexadecimal id does).
func mixed(w string) bool {
	var upper, lower, digit bool
	for i := 0; i < len(w); i++ {
		c := w[i]
		upper = upper || (c >= 'A' && c <= 'Z')
		lower = lower || (c >= 'a' && c <= 'z')
		digit = digit || (c >= '0' && c <= '9')
	}
	return upper && lower && digit
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// replaceSubmatches is re.ReplaceAllStringFunc with the submatches at hand.
func replaceSubmatches(re *regexp.Regexp, s string, fn func(m []string) string) string {
	var b strings.Builder
	last := 0
	for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = s[loc[2*i]:loc[2*i+1]]
			}
		}
		b.WriteString(s[last:loc[0]])
		b.WriteString(fn(m))
		last = loc[1]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// SecretValues are the values of a Secret's data that Redact should replace: every value but a user
// name's (keys username and user: a name is no credential, and blanking it would blank ordinary words),
// without a trailing line end too; for a Docker config (.dockerconfigjson, .dockercfg), also each
// registry's auth, its decoded user:password and password, password, identitytoken and registrytoken.
func SecretValues(data map[string][]byte) []string {
	var out []string
	add := func(v string) {
		for _, w := range []string{v, strings.TrimRight(v, "\r\n")} {
			if len(w) >= MinSecretLength && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	for k, v := range data {
		switch k {
		case "username", "user":
			continue
		case corev1.DockerConfigJsonKey, corev1.DockerConfigKey:
			for _, w := range dockerConfigValues(k, v) {
				add(w)
			}
		}
		add(string(v))
	}
	slices.Sort(out)
	return out
}

// dockerConfigValues are the credentials of a Docker config: {"auths": {...}} (.dockerconfigjson) or
// the bare map (.dockercfg).
func dockerConfigValues(key string, raw []byte) []string {
	type entry struct {
		Auth          string `json:"auth"`
		Password      string `json:"password"`
		IdentityToken string `json:"identitytoken"`
		RegistryToken string `json:"registrytoken"`
	}
	var auths map[string]entry
	if key == corev1.DockerConfigJsonKey {
		var cfg struct {
			Auths map[string]entry `json:"auths"`
		}
		if json.Unmarshal(raw, &cfg) != nil {
			return nil
		}
		auths = cfg.Auths
	} else if json.Unmarshal(raw, &auths) != nil {
		return nil
	}
	var out []string
	for _, e := range auths {
		out = append(out, e.Auth, e.Password, e.IdentityToken, e.RegistryToken)
		if dec, err := base64.StdEncoding.DecodeString(e.Auth); err == nil {
			out = append(out, string(dec))
			if _, pw, ok := strings.Cut(string(dec), ":"); ok {
				out = append(out, pw)
			}
		}
	}
	return out
}
