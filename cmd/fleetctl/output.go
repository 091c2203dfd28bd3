package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// pageRows is how many rows of text output are held and aligned together: output streams without
// holding the whole fleet. A column is as wide as its widest cell so far, so pages line up unless a later
// page holds a wider cell.
const pageRows = 500

// table writes aligned text rows, one page at a time.
type table struct {
	w      io.Writer
	widths []int
	page   [][]string
	err    error
}

var cellReplacer = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		// A cell is one line: a device's message may hold several.
		cells[i] = cellReplacer.Replace(c)
	}
	t.page = append(t.page, cells)
	if len(t.page) >= pageRows {
		t.writePage()
	}
}

func (t *table) writePage() {
	for _, r := range t.page {
		for i, c := range r {
			if i == len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range t.page {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	t.page = t.page[:0]
	if t.err == nil {
		_, t.err = io.WriteString(t.w, b.String())
	}
}

func (t *table) flush() error {
	t.writePage()
	return t.err
}

// jsonList writes a JSON array one element at a time, so that a long answer streams too.
type jsonList struct {
	w   io.Writer
	n   int
	err error
}

func (l *jsonList) add(v any) {
	if l.err != nil {
		return
	}
	sep := ",\n"
	if l.n == 0 {
		sep = "[\n"
	}
	l.n++
	data, err := json.Marshal(v)
	if err != nil {
		l.err = err
		return
	}
	_, l.err = fmt.Fprintf(l.w, "%s%s", sep, data)
}

func (l *jsonList) close() error {
	if l.err != nil {
		return l.err
	}
	end := "\n]\n"
	if l.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(l.w, end)
	return err
}

// textTime is how text output shows a time: UTC to the second, "-" for none.
func textTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
