//go:build linux

package memtrim

import (
	// Linked for its size only: it makes the test binary's read-only pages many more than the few the
	// runtime and this test run again right after a trim, as the manager's 135 MB are, so that "fell by
	// most of what was faulted in" has a margin.
	_ "net/http"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// faultIn reads every page of the test binary's read-only mappings through /proc/self/mem, which faults
// them into this process as running the code would, and returns how many bytes it read.
func faultIn(t *testing.T, exe string) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := ParseMaps(f)
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	var read uint64
	page := make([]byte, 1)
	for _, m := range ReadOnlyOf(maps, exe) {
		for a := m.Start; a < m.End; a += uint64(os.Getpagesize()) {
			if _, err := mem.ReadAt(page, int64(a)); err != nil {
				t.Fatalf("read %x of %+v: %v", a, m, err)
			}
			read += uint64(os.Getpagesize())
		}
	}
	return read
}

// cachedBytes is how much of the file the page cache holds (mincore on a mapping of it, which faults
// nothing in).
func cachedBytes(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(data) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(data)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatal("mincore:", errno)
	}
	var n uint64
	for _, v := range vec {
		if v&1 != 0 {
			n += uint64(page)
		}
	}
	return n
}

// TestTrimGivesPagesBack faults in the test binary's read-only pages, checks that the process's
// file-backed resident set and the page cache show them (the positive control: a measurement that
// could not see them could not see them go either), trims, and checks that both fell by most of them,
// and that the process still runs code afterwards.
func TestTrimGivesPagesBack(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	// go test has just written the binary: its pages may still wait for writeback, and the kernel
	// never drops a dirty page. A deployed binary was written long before it runs.
	if f, err := os.Open(exe); err != nil {
		t.Fatal(err)
	} else {
		err := f.Sync()
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	base, err := readStatus()
	if err != nil {
		t.Fatal(err)
	}
	faulted := faultIn(t, exe)
	if faulted < 1<<20 {
		t.Fatalf("the test binary's read-only mappings hold %d bytes; expected megabytes", faulted)
	}
	before, err := readStatus()
	if err != nil {
		t.Fatal(err)
	}
	cacheBefore := cachedBytes(t, exe)
	t.Logf("read-only mappings %d bytes; RssFile %d before faulting, %d after; page cache holds %d bytes of the binary",
		faulted, base.RSSFile, before.RSSFile, cacheBefore)
	if before.RSSFile < faulted*9/10 {
		t.Fatalf("control: RssFile %d after faulting in %d bytes; the fault was not seen", before.RSSFile, faulted)
	}
	if cacheBefore < faulted*9/10 {
		t.Fatalf("control: the page cache holds %d bytes of the binary after faulting in %d", cacheBefore, faulted)
	}

	res, err := Trim()
	if err != nil {
		t.Fatal(err)
	}
	after, err := readStatus()
	if err != nil {
		t.Fatal(err)
	}
	cacheAfter := cachedBytes(t, exe)
	t.Logf("Trim: %+v; RssFile now %d; page cache %d bytes of the binary", res, after.RSSFile, cacheAfter)
	if res.Mappings == 0 || res.Bytes < faulted {
		t.Errorf("Trim advised %d mappings of %d bytes, want the %d bytes faulted in", res.Mappings, res.Bytes, faulted)
	}
	if after.RSSFile > before.RSSFile-faulted/2 {
		t.Errorf("RssFile %d after Trim, %d before: fell by less than half of the %d bytes faulted in",
			after.RSSFile, before.RSSFile, faulted)
	}
	if res.Trimmed() < int64(faulted/2) {
		t.Errorf("Trim reports %d bytes trimmed, want at least half of %d", res.Trimmed(), faulted)
	}
	// What the process runs again at once (the runtime, this test) is mapped and cached again; of the
	// pages it gave up, most must have left the page cache too.
	if gaveUp := before.RSSFile - after.RSSFile; cacheAfter > cacheBefore-gaveUp/2 {
		t.Errorf("page cache holds %d bytes of the binary after Trim, %d before, while the process gave up %d: the pages were only unmapped, not given back",
			cacheAfter, cacheBefore, gaveUp)
	}
	// The code dropped comes back when it runs again.
	if got := faultIn(t, exe); got != faulted {
		t.Errorf("read %d bytes of the read-only mappings after Trim, %d before", got, faulted)
	}
}
