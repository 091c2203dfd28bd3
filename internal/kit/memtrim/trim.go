package memtrim

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Result is what one Trim did.
type Result struct {
	// Mappings and Bytes are the executable's read-only mappings advised, and their length.
	Mappings int
	Bytes    uint64
	// Skipped counts the read-only mappings left alone because some of their pages are no longer the
	// file's (Mapping.FromFile).
	Skipped int
	// Before and After are the process's resident set, read from /proc/self/status around the advice.
	Before, After Status
}

// Trimmed is how much the file-backed resident set fell.
func (r Result) Trimmed() int64 { return int64(r.Before.RSSFile) - int64(r.After.RSSFile) }

// Status is the resident set of a process, in bytes, from /proc/<pid>/status: VmRSS, RssAnon, RssFile.
type Status struct {
	RSS, RSSAnon, RSSFile uint64
}

// ParseStatus reads VmRSS, RssAnon and RssFile (in kB) from the text of /proc/<pid>/status.
func ParseStatus(r io.Reader) (Status, error) {
	var s Status
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch key {
		case "VmRSS":
			dst = &s.RSS
		case "RssAnon":
			dst = &s.RSSAnon
		case "RssFile":
			dst = &s.RSSFile
		default:
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
		if err != nil {
			return s, fmt.Errorf("status %s: %w", key, err)
		}
		*dst = kb * 1024
		seen++
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if seen != 3 {
		return s, fmt.Errorf("status: %d of VmRSS, RssAnon, RssFile found", seen)
	}
	return s, nil
}

func parseStatusBytes(b []byte) (Status, error) { return ParseStatus(bytes.NewReader(b)) }
