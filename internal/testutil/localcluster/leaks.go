package localcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Process is a running process found on this machine.
type Process struct {
	PID     int
	Command []string
}

func (p Process) String() string {
	return fmt.Sprintf("pid %d: %s", p.PID, strings.Join(p.Command, " "))
}

// ProcessesMentioning lists the processes on this machine, other than this one, with s in their command
// line. Every process a cluster starts (etcd, kube-apiserver, the components, and an operator run
// against its kubeconfig) names a file in the cluster's directory in its arguments, so
// ProcessesMentioning(c.Dir()+"/") finds them all, also ones whose parent is gone. It needs /proc.
func ProcessesMentioning(s string) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("no /proc to look for processes in: %w", err)
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 { // gone meanwhile, a kernel thread, or a zombie
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, s) }) {
			out = append(out, Process{PID: pid, Command: args})
		}
	}
	return out, nil
}

// CheckClosed returns an error naming every address (host:port) that still accepts TCP connections.
func CheckClosed(addrs ...string) error {
	var errs []error
	for _, a := range addrs {
		conn, err := net.DialTimeout("tcp", a, time.Second)
		if err == nil {
			_ = conn.Close()
			errs = append(errs, fmt.Errorf("%s still accepts connections", a))
		}
	}
	return errors.Join(errs...)
}

// Addresses are the host:port addresses the cluster's processes listen on (etcd's client and peer
// URLs, kube-apiserver, and each component's), all on 127.0.0.1.
func (c *Cluster) Addresses() []string {
	c.addrMu.Lock()
	defer c.addrMu.Unlock()
	return slices.Clone(c.addrs)
}

// CheckStopped proves, after Stop, that the cluster left nothing behind: no process mentions its
// directory, none of its addresses accepts connections and the directory is gone. It is what the e2e
// suite and the demo run last.
func (c *Cluster) CheckStopped() error {
	var errs []error
	if c.dir != "" {
		procs, err := ProcessesMentioning(c.dir + string(filepath.Separator))
		if err != nil {
			errs = append(errs, err)
		}
		for _, p := range procs {
			errs = append(errs, fmt.Errorf("process still running: %s", p))
		}
		if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%s still exists", c.dir))
		}
	}
	if err := CheckClosed(c.Addresses()...); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// StopAndCheck is what a suite runs last: Stop, then CheckStopped. took is how long Stop took (the
// suite's "cluster stop" phase); the error joins both failures, each saying which it is.
func (c *Cluster) StopAndCheck() (took time.Duration, err error) {
	start := time.Now()
	stopErr := c.Stop()
	took = time.Since(start)
	if stopErr != nil {
		stopErr = fmt.Errorf("stop cluster: %w", stopErr)
	}
	checkErr := c.CheckStopped()
	if checkErr != nil {
		checkErr = fmt.Errorf("left behind by the cluster: %w", checkErr)
	}
	return took, errors.Join(stopErr, checkErr)
}
