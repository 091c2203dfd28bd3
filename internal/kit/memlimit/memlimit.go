// Package memlimit gives the Go garbage collector a soft memory limit below the container's, so the
// operator's heap is collected harder as it nears the limit instead of the container being OOM-killed.
package memlimit

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction of the container's memory limit the Go runtime may use: the rest is for what the runtime does
// not count (thread stacks, the binary) and for the collector's headroom.
const Fraction = 0.9

// CgroupFile is where cgroup v2 puts the container's memory limit.
const CgroupFile = "/sys/fs/cgroup/memory.max"

// Set sets the runtime's soft memory limit to Fraction of the cgroup limit in file and returns it, in
// bytes. It does nothing (and returns 0) when GOMEMLIMIT is set, which wins, or when there is no limit
// (no cgroup v2 file, or "max").
func Set(file string) (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	limit, err := FromCgroup(string(data))
	if err != nil || limit == 0 {
		return 0, err
	}
	debug.SetMemoryLimit(limit)
	return limit, nil
}

// FromCgroup is the soft limit for the contents of memory.max: Fraction of it, or 0 for "max".
func FromCgroup(content string) (int64, error) {
	s := strings.TrimSpace(content)
	if s == "max" || s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("memory.max: %q is not a byte count", s)
	}
	return int64(float64(n) * Fraction), nil
}
