package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// measured are the programs whose memory and CPU a step reports, by their /proc comm (cut to 15 bytes).
var measured = map[string]string{
	"platform-operat": "platform-operator",
	"pg_dump":         "pg_dump",
	"pg_restore":      "pg_restore",
}

// servers are this process's children that are not a step's: the servers, whose processes it never
// descends into.
var servers = map[string]bool{"postgres": true, "versitygw": true}

// usage is one process's peak resident set (VmHWM) and CPU time, as last read from /proc.
type usage struct {
	name   string
	hwmKiB int64
	cpu    time.Duration
}

// sampler reads /proc every interval for the descendants of this process that measured names, keeping
// each one's last VmHWM (a high-water mark: the last reading before the process exits is its peak but for
// what it grew in the last interval) and CPU time.
type sampler struct {
	mu    sync.Mutex
	procs map[int]*usage
	stop  chan struct{}
	done  chan struct{}
}

// ticks is the kernel's clock ticks per second for /proc/<pid>/stat (USER_HZ, 100 on Linux).
const ticks = 100

func startSampler(interval time.Duration) *sampler {
	s := &sampler{procs: map[int]*usage{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops sampling and returns the peak of each program (by name, the largest of its processes) and
// its CPU time (summed over its processes).
func (s *sampler) finish() map[string]usage {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]usage{}
	for _, u := range s.procs {
		o := out[u.name]
		o.name = u.name
		o.hwmKiB = max(o.hwmKiB, u.hwmKiB)
		o.cpu += u.cpu
		out[u.name] = o
	}
	return out
}

func (s *sampler) sample() {
	self := os.Getpid()
	seen := map[int]bool{self: true}
	queue := children(self)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		comm := readComm(pid)
		if servers[comm] {
			continue
		}
		if name, ok := measured[comm]; ok {
			hwm, cpu, ok := readUsage(pid)
			if ok {
				s.mu.Lock()
				u := s.procs[pid]
				if u == nil {
					u = &usage{name: name}
					s.procs[pid] = u
				}
				u.hwmKiB = max(u.hwmKiB, hwm)
				u.cpu = max(u.cpu, cpu)
				s.mu.Unlock()
			}
		}
		queue = append(queue, children(pid)...)
	}
}

// children are pid's child processes (/proc/<pid>/task/<tid>/children of each of its threads).
func children(pid int) []int {
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func readComm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readUsage is pid's VmHWM (KiB) and its user and system CPU time.
func readUsage(pid int) (hwmKiB int64, cpu time.Duration, ok bool) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, found := strings.CutPrefix(line, "VmHWM:"); found {
			f := strings.Fields(rest)
			if len(f) > 0 {
				hwmKiB, _ = strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return hwmKiB, 0, hwmKiB > 0
	}
	// The fields after the command (in parentheses, which may hold spaces): utime and stime are the
	// 14th and 15th fields of the line, the 12th and 13th after ") ".
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		f := strings.Fields(s[i+1:])
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			cpu = time.Duration(u+st) * time.Second / ticks
		}
	}
	return hwmKiB, cpu, hwmKiB > 0
}
