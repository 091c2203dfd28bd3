//go:build !linux

package scorecard

import "syscall"

func sandbox(string) *syscall.SysProcAttr { return nil }

// Supported tells whether entry points can run in a private root here.
func Supported() error { return ErrNoSandbox }
