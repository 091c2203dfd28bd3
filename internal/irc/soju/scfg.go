package soju

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The encoder is written here rather than taken from emersion's go-scfg (git.sr.ht/~emersion/go-scfg), the
// library soju reads its config with: the Go module proxy this project builds from does not serve it. The
// tests read what Encode writes with a reader written from the format's description and fuzz the quoting.

// Directive is one line of an scfg document (https://git.sr.ht/~emersion/scfg): a name, its parameters,
// and an optional block of child directives.
type Directive struct {
	Name     string
	Params   []string
	Children []Directive
}

// Encode writes directives as an scfg document, one directive a line, children indented by a tab inside
// braces. Every word is written so that soju's reader gets it back unchanged: a word of only safe
// characters as it is, any other in double quotes with '"' and '\' escaped by a backslash. Words the
// format cannot carry are refused rather than written differently: control characters (a line break
// would end the directive), invalid UTF-8, a directive name that is not a plain word, and a last
// parameter "{" (which readers take for the start of a block however it is quoted).
func Encode(directives []Directive) ([]byte, error) {
	var b strings.Builder
	if err := encode(&b, directives, 0); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func encode(b *strings.Builder, directives []Directive, depth int) error {
	for _, d := range directives {
		if !isAtom(d.Name) || d.Name[0] == '#' {
			return fmt.Errorf("scfg: directive name %q is not a plain word", d.Name)
		}
		b.WriteString(strings.Repeat("\t", depth))
		b.WriteString(d.Name)
		for i, p := range d.Params {
			if i == len(d.Params)-1 && p == "{" {
				return fmt.Errorf("scfg: directive %s: a last parameter %q reads as the start of a block", d.Name, p)
			}
			w, err := Quote(p)
			if err != nil {
				return fmt.Errorf("scfg: directive %s: %w", d.Name, err)
			}
			b.WriteByte(' ')
			b.WriteString(w)
		}
		if len(d.Children) > 0 {
			b.WriteString(" {\n")
			if err := encode(b, d.Children, depth+1); err != nil {
				return err
			}
			b.WriteString(strings.Repeat("\t", depth))
			b.WriteString("}")
		}
		b.WriteByte('\n')
	}
	return nil
}

// Quote is word as an scfg word: itself when it is a non-empty run of safe characters, otherwise in
// double quotes with '"' and '\' escaped. It refuses control characters and invalid UTF-8, which the
// format cannot carry.
func Quote(word string) (string, error) {
	if !utf8.ValidString(word) {
		return "", errors.New("value is not valid UTF-8")
	}
	for _, r := range word {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("value holds control character %U, which soju's config cannot carry", r)
		}
	}
	if isAtom(word) {
		return word, nil
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(word) + `"`, nil
}

// isAtom says whether s can be written unquoted: ASCII letters, digits and a few punctuation marks that
// mean nothing to the format. Everything else (spaces, quotes, backslashes, braces, '#', non-ASCII) is
// quoted.
func isAtom(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_.:/+@=,[]%*!?~^", c) >= 0:
		default:
			return false
		}
	}
	return true
}
