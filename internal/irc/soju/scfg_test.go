package soju

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// parse is an scfg reader written from the format's specification, for these tests only: a directive a
// line, words separated by spaces or tabs, a word an atom or a double-quoted string (backslash escapes
// the next character) or a single-quoted string (taken literally), '#' lines are comments, a last word
// "{" opens a block that a line "}" closes.
func parse(doc string) ([]Directive, error) {
	lines := strings.Split(doc, "\n")
	if lines[len(lines)-1] != "" {
		return nil, errors.New("document does not end in a newline")
	}
	i := 0
	return parseBlock(lines[:len(lines)-1], &i, false)
}

func parseBlock(lines []string, i *int, nested bool) ([]Directive, error) {
	var out []Directive
	for ; *i < len(lines); *i++ {
		line := strings.Trim(lines[*i], " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		if line == "}" {
			if !nested {
				return nil, fmt.Errorf("line %d: } outside a block", *i+1)
			}
			return out, nil
		}
		words, block, err := splitWords(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", *i+1, err)
		}
		d := Directive{Name: words[0], Params: words[1:]}
		if len(d.Params) == 0 {
			d.Params = nil
		}
		if block {
			*i++
			if d.Children, err = parseBlock(lines, i, true); err != nil {
				return nil, err
			}
		}
		out = append(out, d)
	}
	if nested {
		return nil, errors.New("unclosed block")
	}
	return out, nil
}

func splitWords(line string) (words []string, block bool, err error) {
	var (
		cur     strings.Builder
		inWord  bool
		quote   rune
		escaped bool
		quoted  []bool
	)
	end := func(wasQuoted bool) {
		words = append(words, cur.String())
		quoted = append(quoted, wasQuoted)
		cur.Reset()
		inWord = false
	}
	wasQuoted := false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '"' && r == '\\':
			escaped = true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == ' ' || r == '\t':
			if inWord {
				end(wasQuoted)
				wasQuoted = false
			}
		case r == '"' || r == '\'':
			quote, inWord, wasQuoted = r, true, true
		case r == '\\':
			escaped, inWord = true, true
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, false, errors.New("unterminated quote or escape")
	}
	if inWord {
		end(wasQuoted)
	}
	if n := len(words); n > 1 && words[n-1] == "{" && !quoted[n-1] {
		return words[:n-1], true, nil
	}
	return words, false, nil
}

func TestQuote(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "irc.example.com", want: "irc.example.com"},
		{in: "ircs://:6697", want: "ircs://:6697"},
		{in: "irc+insecure://[::]:6667", want: "irc+insecure://[::]:6667"},
		{in: "", want: `""`},
		{in: "two words", want: `"two words"`},
		{in: `say "hi"`, want: `"say \"hi\""`},
		{in: `back\slash`, want: `"back\\slash"`},
		{in: "it's", want: `"it's"`},
		{in: "#chan", want: `"#chan"`},
		{in: "{", want: `"{"`},
		{in: "}", want: `"}"`},
		{in: "héllo", want: `"héllo"`},
		{in: "host='db' port=5432", want: `"host='db' port=5432"`},
		{in: "line\nbreak", wantErr: true},
		{in: "carriage\rreturn", wantErr: true},
		{in: "tab\there", wantErr: true},
		{in: "nul\x00", wantErr: true},
		{in: "del\x7f", wantErr: true},
		{in: "bad\xff", wantErr: true},
	}
	for _, tt := range tests {
		got, err := Quote(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Quote(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestEncode(t *testing.T) {
	doc := []Directive{
		{Name: "listen", Params: []string{"ircs://:6697"}},
		{Name: "title", Params: []string{`My "bouncer"`}},
		{Name: "block", Params: []string{"a"}, Children: []Directive{{Name: "inner", Params: []string{"x y"}}, {Name: "empty"}}},
	}
	got, err := Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := "listen ircs://:6697\ntitle \"My \\\"bouncer\\\"\"\nblock a {\n\tinner \"x y\"\n\tempty\n}\n"
	if string(got) != want {
		t.Errorf("Encode =\n%s\nwant\n%s", got, want)
	}
	back, err := parse(string(got))
	if err != nil || !reflect.DeepEqual(back, doc) {
		t.Errorf("parse(Encode) = %+v, %v; want %+v", back, err, doc)
	}

	for name, bad := range map[string][]Directive{
		"name with a space":  {{Name: "a b"}},
		"empty name":         {{Name: ""}},
		"comment name":       {{Name: "#x"}},
		"newline in a param": {{Name: "title", Params: []string{"a\nhostname evil"}}},
		"last param {":       {{Name: "title", Params: []string{"{"}}},
		"bad child":          {{Name: "a", Children: []Directive{{Name: "b", Params: []string{"\x00"}}}}},
	} {
		if out, err := Encode(bad); err == nil {
			t.Errorf("%s: Encode = %q, want an error", name, out)
		}
	}
}

// FuzzQuote checks that any value the encoder accepts reads back unchanged, as the only word of its
// directive, and that what it refuses is what the format cannot carry.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a", "a b", `"`, `\`, `\"`, "'", "{", "}", "#", "x {", "host='a\\'b' port=1", "é", "\u2028", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Encode([]Directive{{Name: "title", Params: []string{s}}, {Name: "hostname", Params: []string{"h"}}})
		representable := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) && s != "{"
		if err != nil {
			if representable {
				t.Fatalf("Encode refused %q: %v", s, err)
			}
			return
		}
		if !representable {
			t.Fatalf("Encode accepted %q, which the format cannot carry: %q", s, out)
		}
		back, err := parse(string(out))
		if err != nil {
			t.Fatalf("Encode(%q) = %q does not parse: %v", s, out, err)
		}
		want := []Directive{{Name: "title", Params: []string{s}}, {Name: "hostname", Params: []string{"h"}}}
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("Encode(%q) = %q reads back as %+v", s, out, back)
		}
	})
}
