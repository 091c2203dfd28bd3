package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"
)

// heapPeak samples the live heap every few milliseconds while f runs and returns the highest value seen,
// over the heap in use before f (after a collection).
func heapPeak(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var (
		peak uint64
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// TestPutMemoryIsBounded puts a 256 MiB stream generated as it is read (never held whole) and a 32 MiB
// one, and checks the heap's growth stays under a generous bound that does not depend on the size: the
// upload holds one objectstore.PartSize part at a time. The 256 MiB artifact is read back through Get and
// its checksum compared, so the bound is about a transfer that worked.
func TestPutMemoryIsBounded(t *testing.T) {
	repo, _ := newRepo(t, "memory", "team-a")
	const bound = 96 << 20
	peaks := map[int64]uint64{}
	for _, size := range []int64{32 << 20, 256 << 20} {
		r := ref(fmt.Sprintf("size-%dmib", size>>20))
		var err error
		peaks[size] = heapPeak(func() {
			_, err = repo.Put(t.Context(), r, &pattern{n: size}, PutOptions{Format: FormatPgDumpCustom})
		})
		if err != nil {
			t.Fatalf("Put(%d MiB) = %v", size>>20, err)
		}
		t.Logf("Put(%d MiB): heap grew by at most %.1f MiB", size>>20, float64(peaks[size])/(1<<20))
		if peaks[size] > bound {
			t.Errorf("Put(%d MiB): the heap grew by %d MiB, over the %d MiB bound", size>>20, peaks[size]>>20, bound>>20)
		}
		if size == 256<<20 {
			h := sha256.New()
			if _, err := io.Copy(h, &pattern{n: size}); err != nil {
				t.Fatal(err)
			}
			var getErr error
			peak := heapPeak(func() {
				var m Manifest
				m, getErr = repo.Get(t.Context(), r, io.Discard)
				if getErr == nil && m.SHA256 != hex.EncodeToString(h.Sum(nil)) {
					t.Errorf("the manifest's sha256 %s is not the stream's", m.SHA256)
				}
			})
			if getErr != nil {
				t.Fatalf("Get(256 MiB) = %v", getErr)
			}
			t.Logf("Get(256 MiB): heap grew by at most %.1f MiB", float64(peak)/(1<<20))
			if peak > bound {
				t.Errorf("Get(256 MiB): the heap grew by %d MiB, over the %d MiB bound", peak>>20, bound>>20)
			}
		}
	}
}
