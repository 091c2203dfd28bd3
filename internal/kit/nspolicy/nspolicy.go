// Package nspolicy reads the operator flags that give each namespace its own allowance
// ("NAMESPACE=WHAT;NAMESPACE=WHAT"): the entries, their namespaces and their "|" lists, with the same
// syntax and the same error messages for every flag. What an entry allows is the flag's own business.
package nspolicy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Any is the namespace of an entry for every namespace, and the item of a list that allows anything.
const Any = "*"

// Entry is one NAMESPACE=VALUE entry of a per-namespace policy flag.
type Entry struct {
	// Flag is the flag's name without dashes, for error messages.
	Flag string
	// Text is the entry as written (blanks around it trimmed), for error messages.
	Text string
	// Namespace is a namespace name or Any.
	Namespace string
	// Value is what follows the first "=", blanks around it trimmed.
	Value string
}

// Parse splits the value s of flag --flag into its entries and hands each to each, in order: separated
// by ";", each NAMESPACE=VALUE, with NAMESPACE a namespace name or "*"; blanks around the separators are
// ignored and an empty s has no entries. syntax is the entry's form in the flag's own words
// ("NAMESPACE=KEY:VALUE|VALUE"), for the error about an entry without "=". The first error, Parse's or
// each's, stops the parse: the error names the first bad entry, whatever is wrong with it.
func Parse(flag, syntax, s string, each func(Entry) error) error {
	for text := range strings.SplitSeq(s, ";") {
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		ns, value, ok := strings.Cut(text, "=")
		e := Entry{Flag: flag, Text: text, Namespace: strings.TrimSpace(ns), Value: strings.TrimSpace(value)}
		if !ok {
			return e.Errorf("want %s", syntax)
		}
		if e.Namespace != Any && len(validation.IsDNS1123Label(e.Namespace)) > 0 {
			return e.Errorf("%q is neither a namespace name nor *", e.Namespace)
		}
		if err := each(e); err != nil {
			return err
		}
	}
	return nil
}

// Errorf is an error about the entry: "--FLAG entry "TEXT": " and the formatted message.
func (e Entry) Errorf(format string, args ...any) error {
	return fmt.Errorf("--%s entry %q: %s", e.Flag, e.Text, fmt.Sprintf(format, args...))
}

// List splits list, a part of the entry's value, at "|" into its items, blanks around each trimmed.
// valid decides each item; the first it refuses is the error "--FLAG entry "TEXT": " and refusal, a
// format with one %q for the item.
func (e Entry) List(list string, valid func(item string) bool, refusal string) ([]string, error) {
	var out []string
	for item := range strings.SplitSeq(list, "|") {
		item = strings.TrimSpace(item)
		if !valid(item) {
			return nil, e.Errorf(refusal, item)
		}
		out = append(out, item)
	}
	return out, nil
}
