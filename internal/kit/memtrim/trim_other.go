//go:build !linux

package memtrim

import "time"

// Supported says whether Trim can do anything on this system.
const Supported = false

// Trim does nothing outside Linux.
func Trim() (Result, error) { return Result{}, nil }

// processCPU is not measured outside Linux; Runnable never asks, since it trims only on Linux.
func processCPU() (time.Duration, error) { return 0, nil }
