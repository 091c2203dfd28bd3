//go:build !linux

package localcluster

import "syscall"

// childSysProcAttr puts a child in its own process group. Only Linux has a parent-death signal; elsewhere
// a parent killed with SIGKILL leaves its children running.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// withDeathSignal returns bin unchanged: only Linux has a parent-death signal.
func withDeathSignal(_, bin string) (string, error) { return bin, nil }
