package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// childSysProcAttr puts a child in its own process group and has the kernel send it SIGKILL when its
// parent dies: a test binary killed by `go test -timeout`, or with SIGKILL, takes its cluster with it.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

var (
	setprivOnce sync.Once
	setprivPath string
)

// setpriv finds util-linux's setpriv when it knows --pdeathsig (util-linux 2.33 and later), else "".
func setpriv() string {
	setprivOnce.Do(func() {
		path, err := exec.LookPath("setpriv")
		if err != nil {
			return
		}
		help, err := exec.Command(path, "--help").CombinedOutput()
		if err == nil && strings.Contains(string(help), "--pdeathsig") {
			setprivPath = path
		}
	})
	return setprivPath
}

// withDeathSignal returns an executable that runs bin with a parent-death signal of SIGKILL. envtest
// starts etcd and kube-apiserver itself and offers no hook for the signal, so they are started through
// a two-line script in dir that execs setpriv --pdeathsig KILL, which execs bin: the pid, the process
// name and the arguments envtest sees stay bin's. Without setpriv, bin is returned unchanged and only
// Stop (and envtest's own process groups) stand between a killed parent and orphans.
func withDeathSignal(dir, bin string) (string, error) {
	sp := setpriv()
	if sp == "" {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	wrapper := filepath.Join(dir, filepath.Base(bin))
	script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", shellQuote(sp), shellQuote(bin))
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		return "", err
	}
	return wrapper, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
