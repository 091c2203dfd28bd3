//go:build linux

package olm

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// proc is one process the suite started: olm, catalog, opm serve or platform-operator.
type proc struct {
	*localcluster.Child
	name    string
	logPath string
	addrs   []string // 127.0.0.1 addresses it listens on, checked closed after it stopped
}

var (
	procsMu sync.Mutex
	procs   []*proc
)

func allProcs() []*proc {
	procsMu.Lock()
	defer procsMu.Unlock()
	return append([]*proc(nil), procs...)
}

// startProc starts bin in its own process group, with SIGKILL from the kernel should this test process
// die first, its output in <logDir>/<name>-<n>.log.
func startProc(name, bin string, args, env []string, addrs ...string) *proc {
	GinkgoHelper()
	logPath := filepath.Join(logDir, fmt.Sprintf("%s-%d.log", name, len(allProcs())))
	log, err := localcluster.CreateLog(logPath, bin, args)
	Expect(err).NotTo(HaveOccurred())
	child, err := localcluster.StartChild(name, bin, args, env, log)
	Expect(err).NotTo(HaveOccurred(), "start %s", name)
	return track(&proc{Child: child, name: name, logPath: logPath, addrs: addrs})
}

// track adds p to the processes AfterSuite stops and checks.
func track(p *proc) *proc {
	procsMu.Lock()
	defer procsMu.Unlock()
	procs = append(procs, p)
	return p
}

// exited tells whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.Done():
		return true, p.Err()
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, SIGKILL after 20 s, and waits for the process. Having to kill
// it is no error here: only a process that outlives SIGKILL is. Idempotent.
func (p *proc) stop() error {
	err := p.Stop(20 * time.Second)
	select {
	case <-p.Done():
		err = nil
	default:
	}
	// Whatever it started in its group goes too.
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	return err
}

// checkGone fails when the process, anything left in its process group, or one of its addresses is still
// there.
func (p *proc) checkGone() error {
	var errs []error
	if err := syscall.Kill(-p.PID(), 0); !errors.Is(err, syscall.ESRCH) {
		errs = append(errs, fmt.Errorf("process group of %s (pid %d) still has processes (kill 0: %v)", p.name, p.PID(), err))
	}
	if err := localcluster.CheckClosed(p.addrs...); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
	}
	return errors.Join(errs...)
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string { return localcluster.TailFile(p.logPath, n) }

// run runs a short command (opm render, opm serve --cache-only) and returns its stdout.
func run(bin string, args ...string) []byte {
	GinkgoHelper()
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "%s %s: %s", bin, strings.Join(args, " "), stderr.String())
	return out
}
