package memtrim

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/<pid>/maps.
type Mapping struct {
	Start, End uint64
	// Perms is the four-letter permission field: "r-xp", "r--p", "rw-p".
	Perms string
	// Path is the mapped file, "[heap]" and the like, or empty for an anonymous mapping. A file replaced
	// or removed since it was mapped keeps the kernel's " (deleted)" suffix.
	Path string
	// Anonymous and Swap (bytes) come from /proc/<pid>/smaps only: the mapping's pages that are no longer
	// the file's (copied on write, such as relocations applied before the mapping was made read-only),
	// in memory and swapped out. Zero when read from maps.
	Anonymous, Swap uint64
}

// Size is the mapping's length in bytes.
func (m Mapping) Size() uint64 { return m.End - m.Start }

// Writable says whether the mapping may be written: such a mapping of a file holds the process's own
// changes (a binary's .data), which paging out or dropping would lose.
func (m Mapping) Writable() bool { return len(m.Perms) > 1 && m.Perms[1] == 'w' }

// FromFile says whether the mapping's pages are all still the file's, so that dropping them loses
// nothing: none was copied on write (Anonymous, Swap). Only smaps says; read from maps, it is true.
func (m Mapping) FromFile() bool { return m.Anonymous == 0 && m.Swap == 0 }

// ParseMaps reads /proc/<pid>/maps ("start-end perms offset dev inode [path]", one mapping a line) or
// /proc/<pid>/smaps (the same lines, each followed by "Key: value kB" lines, of which it keeps
// Anonymous and Swap).
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if key, value, ok := smapsField(line); ok {
			if len(out) == 0 {
				return nil, fmt.Errorf("maps line %d %q: a field before any mapping", n, line)
			}
			if key != "Anonymous" && key != "Swap" {
				continue
			}
			kb, err := strconv.ParseUint(strings.TrimSuffix(value, " kB"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("maps line %d %q: %w", n, line, err)
			}
			if key == "Anonymous" {
				out[len(out)-1].Anonymous = kb * 1024
			} else {
				out[len(out)-1].Swap = kb * 1024
			}
			continue
		}
		m, err := parseMapping(line)
		if err != nil {
			return nil, fmt.Errorf("maps line %d %q: %w", n, line, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// smapsField splits an smaps field line ("Rss:    24 kB", "VmFlags: rd mr"): a word ending in a colon.
// A mapping's line starts with an address range, which holds no colon.
func smapsField(line string) (key, value string, ok bool) {
	key, value, ok = strings.Cut(line, ":")
	if !ok || key == "" || strings.ContainsAny(key, " -") {
		return "", "", false
	}
	return key, strings.TrimSpace(value), true
}

func parseMapping(line string) (Mapping, error) {
	// Five fields separated by single spaces, then padding, then the path, which may hold spaces.
	rest := line
	var fields [5]string
	for i := range fields {
		rest = strings.TrimLeft(rest, " ")
		f, after, ok := strings.Cut(rest, " ")
		if !ok && i < len(fields)-1 {
			return Mapping{}, fmt.Errorf("%d fields, want at least 5", i+1)
		}
		fields[i], rest = f, after
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		return Mapping{}, fmt.Errorf("address range %q", fields[0])
	}
	start, err := strconv.ParseUint(lo, 16, 64)
	if err != nil {
		return Mapping{}, fmt.Errorf("start address: %w", err)
	}
	end, err := strconv.ParseUint(hi, 16, 64)
	if err != nil {
		return Mapping{}, fmt.Errorf("end address: %w", err)
	}
	if end < start {
		return Mapping{}, fmt.Errorf("end %x before start %x", end, start)
	}
	if len(fields[1]) != 4 {
		return Mapping{}, fmt.Errorf("permissions %q", fields[1])
	}
	return Mapping{Start: start, End: end, Perms: fields[1], Path: strings.TrimLeft(rest, " ")}, nil
}

// ReadOnlyOf is the mappings of the file at path that cannot be written: a binary's code and read-only
// data, whose pages the file holds and the kernel can read back at any time.
func ReadOnlyOf(maps []Mapping, path string) []Mapping {
	var out []Mapping
	for _, m := range maps {
		if m.Writable() || (m.Path != path && m.Path != path+" (deleted)") {
			continue
		}
		out = append(out, m)
	}
	return out
}
