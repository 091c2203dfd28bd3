//go:build !linux

package memtrim

// Supported says whether Trim can do anything on this system.
const Supported = false

// Trim does nothing outside Linux.
func Trim() (Result, error) { return Result{}, nil }
