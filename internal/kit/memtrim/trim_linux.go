//go:build linux

package memtrim

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Supported says whether Trim can do anything on this system.
const Supported = true

// Trim gives back the pages of the executable's read-only mappings (code, read-only data, the function
// tables): it advises each MADV_RANDOM, so that a page used again comes back alone rather than with its
// neighbours by readahead, then MADV_DONTNEED, which unmaps its pages from this process; then it asks
// the kernel (POSIX_FADV_DONTNEED) to drop the binary's pages that no process maps any more from the
// page cache. The pages are the file's, clean: nothing is lost, the next use reads them back.
//
// Not MADV_PAGEOUT, which would do both at once: the kernel pages out a file's pages only for a process
// that could open the file for writing (its owner, or with write permission), and the operator's image
// runs as a user that does not own its root-owned binary, where MADV_PAGEOUT does nothing
// (docs/performance.md). A read-only mapping holding pages that are no longer the file's (relocations
// of a dynamically linked binary, copied on write before the mapping was made read-only: smaps'
// Anonymous and Swap) is left alone, since dropping them would lose them.
func Trim() (Result, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Result{}, fmt.Errorf("memtrim: the executable's path: %w", err)
	}
	// The page cache is reached through /proc/self/exe, which opens the very file mapped even after it
	// was replaced on disk (the maps then say "(deleted)").
	return trimFile(exe, "/proc/self/exe")
}

func trimFile(path, open string) (Result, error) {
	var res Result
	before, err := readStatus()
	if err != nil {
		return res, err
	}
	res.Before = before
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return res, fmt.Errorf("memtrim: %w", err)
	}
	maps, err := ParseMaps(f)
	_ = f.Close()
	if err != nil {
		return res, fmt.Errorf("memtrim: %w", err)
	}
	targets := ReadOnlyOf(maps, path)
	if len(targets) == 0 {
		return res, fmt.Errorf("memtrim: no read-only mapping of %s in /proc/self/smaps", path)
	}
	var errs []error
	for _, m := range targets {
		if !m.FromFile() {
			res.Skipped++
			continue
		}
		if err := advise(m, unix.MADV_RANDOM); err != nil {
			errs = append(errs, err)
		}
		if err := advise(m, unix.MADV_DONTNEED); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Mappings++
		res.Bytes += m.Size()
	}
	if res.Mappings > 0 {
		errs = append(errs, dropCache(open))
	}
	after, err := readStatus()
	res.After = after
	return res, errors.Join(append(errs, err)...)
}

// dropCache asks the kernel to drop the file's clean pages that no process maps from the page cache;
// it needs only a descriptor open for reading.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("memtrim: %w", err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("memtrim: fadvise(%s, DONTNEED): %w", path, err)
	}
	return nil
}

func advise(m Mapping, advice int) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.Start), uintptr(m.Size()), uintptr(advice))
	if errno != 0 {
		return fmt.Errorf("memtrim: madvise(%x-%x %s, %d): %w", m.Start, m.End, m.Perms, advice, errno)
	}
	return nil
}

func readStatus() (Status, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Status{}, fmt.Errorf("memtrim: %w", err)
	}
	return parseStatusBytes(b)
}

// processCPU is the user and system CPU time of every thread of the process so far.
func processCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
