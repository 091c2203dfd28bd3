//go:build !linux

package redistest

import "syscall"

// sysProcAttr: only Linux has a parent-death signal; elsewhere Stop alone ends the server.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
