package scorecard

import (
	"os"
	"syscall"
)

// nobody is the user a test runs as when this process is root, as a scorecard pod runs its test as a
// non-root user.
const nobody = 65534

// sandbox runs the entry point with root as its "/" (chroot), so that it finds the bundle at /bundle
// without this machine's / being touched. As root that is a plain chroot, after which the test drops to
// nobody; as any other user it happens in a new user namespace, where the process may chroot, mapped
// back to the calling user.
func sandbox(root string) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Chroot: root, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		attr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	return attr
}

// Supported tells whether entry points can run in a private root here.
func Supported() error { return nil }
