package testutil

import (
	"strings"
	"sync"
	"testing"
)

// TestSyncBuffer writes from several goroutines (the race detector checks the locking) and reads every
// write back whole.
func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("ab\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("ab\n", 800) {
		t.Errorf("%d bytes, want 2400 of whole lines", len(got))
	}
}
