package redistest

import "syscall"

// sysProcAttr has the kernel kill the server when the test binary dies, so no server outlives its tests.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
