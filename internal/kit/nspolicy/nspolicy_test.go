package nspolicy

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Entry
		wantErr string
	}{
		{name: "empty allows nothing", in: "", want: nil},
		{name: "blanks and empty entries", in: " ; ;", want: nil},
		{name: "entries", in: " team-a = x|y ;*=*", want: []Entry{
			{Flag: "f", Text: "team-a = x|y", Namespace: "team-a", Value: "x|y"},
			{Flag: "f", Text: "*=*", Namespace: "*", Value: "*"},
		}},
		{name: "only the first = splits", in: "a=b=c", want: []Entry{{Flag: "f", Text: "a=b=c", Namespace: "a", Value: "b=c"}}},
		{name: "empty value", in: "a=", want: []Entry{{Flag: "f", Text: "a=", Namespace: "a"}}},
		// Hostile: an entry without "=" and namespaces that are not names (a pattern, upper case, a path).
		{name: "no =", in: "ok=x;team-a", wantErr: `--f entry "team-a": want NS=X`},
		{name: "pattern", in: "team-*=x", wantErr: `--f entry "team-*=x": "team-*" is neither a namespace name nor *`},
		{name: "upper case", in: "Team=x", wantErr: `"Team" is neither a namespace name nor *`},
		{name: "empty namespace", in: "=x", wantErr: `"" is neither a namespace name nor *`},
		{name: "path", in: "a/b=x", wantErr: `"a/b" is neither a namespace name nor *`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Entry
			err := Parse("f", "NS=X", tt.in, func(e Entry) error { got = append(got, e); return nil })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q) = %#v, %v; want %#v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestParseStopsAtTheFirstBadEntry: an entry the caller refuses is reported even when a later one is
// malformed, and the later one is not read.
func TestParseStopsAtTheFirstBadEntry(t *testing.T) {
	var seen []string
	err := Parse("f", "NS=X", "a=bad;b=ok;c", func(e Entry) error {
		seen = append(seen, e.Namespace)
		if e.Value == "bad" {
			return e.Errorf("%q is bad", e.Value)
		}
		return nil
	})
	if err == nil || err.Error() != `--f entry "a=bad": "bad" is bad` || !reflect.DeepEqual(seen, []string{"a"}) {
		t.Fatalf("Parse = %v after %v; want the first entry's error after it alone", err, seen)
	}
	// The positive control: without the refusal, the malformed last entry is the error.
	err = Parse("f", "NS=X", "a=bad;b=ok;c", func(Entry) error { return nil })
	if err == nil || err.Error() != `--f entry "c": want NS=X` {
		t.Fatalf("Parse = %v, want the malformed entry's error", err)
	}
}

func TestList(t *testing.T) {
	e := Entry{Flag: "f", Text: "a=x"}
	notEmpty := func(s string) bool { return s != "" }
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{name: "one", in: "x", want: []string{"x"}},
		{name: "blanks trimmed", in: " x | y ", want: []string{"x", "y"}},
		// Hostile: an empty item between separators is refused, not skipped.
		{name: "empty item", in: "x||y", wantErr: `--f entry "a=x": item "" refused`},
		{name: "empty list", in: "", wantErr: `item "" refused`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.List(tt.in, notEmpty, "item %q refused")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("List(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("List(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}
