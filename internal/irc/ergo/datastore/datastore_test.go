package datastore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fixture writes f into a temporary ircd.db and returns its path, its bytes and the counts ergo loads.
func fixture(t *testing.T, f Fixture) (string, []byte, Counts) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ircd.db")
	want, err := WriteFixture(path, f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data, want
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// countDBOf writes data to a new file and opens it with buntdb (which may truncate it).
func countDBOf(t *testing.T, data []byte) (Counts, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return CountDB(path)
}

// TestFixtureCounts: a fixture of accounts (some pending, some unregistered) and channels (some dropped);
// the streaming counter, buntdb, and what the fixture wrote agree. The control: another fixture gives
// other counts, so the comparison can fail.
func TestFixtureCounts(t *testing.T) {
	f := Fixture{
		Accounts: names("Alice", 40), PendingAccounts: names("pending", 3), Unregistered: []string{"Alice3", "Alice7"},
		Channels: names("#chan", 12), DroppedChannels: []string{"#chan5"},
	}
	path, data, want := fixture(t, f)
	if want != (Counts{Accounts: 38, PendingAccounts: 3, Channels: 11, Schema: "24"}) {
		t.Fatalf("fixture counts %+v", want)
	}
	got, err := Count(bytes.NewReader(data), CountOptions{})
	if err != nil || got.Counts != want || got.TornTail != 0 || got.Bytes != int64(len(data)) {
		t.Fatalf("Count = %+v, %v; want %+v over %d bytes", got, err, want, len(data))
	}
	db, err := CountDB(path)
	if err != nil || db != want {
		t.Fatalf("CountDB = %+v, %v; want %+v", db, err, want)
	}
	// The keys are ergo's: the deletes of the unregistered accounts are in the file.
	for _, s := range []string{"account.exists alice3", "account.unregistered alice3", SchemaVersionKey, "$3\r\ndel\r\n"} {
		if !bytes.Contains(data, []byte(s)) {
			t.Errorf("the file lacks %q", s)
		}
	}
	_, other, _ := fixture(t, Fixture{Accounts: names("bob", 5), Channels: names("#x", 2)})
	if got, _ := Count(bytes.NewReader(other), CountOptions{}); got.Counts == want {
		t.Fatal("control: another fixture has the same counts")
	}
}

// TestTornTail: the file cut at every offset inside its last commands opens in buntdb (which drops the
// torn command) and the counter agrees with it; a cut inside the last account's transaction loses that
// account, as buntdb does.
func TestTornTail(t *testing.T) {
	_, data, want := fixture(t, Fixture{Accounts: names("acc", 6), Channels: names("#c", 3), DroppedChannels: []string{"#c1"}})
	// The last 400 bytes hold the last channel's registration and its drop.
	lost := 0
	for cut := len(data) - 400; cut < len(data); cut++ {
		torn := data[:cut]
		got, err := Count(bytes.NewReader(torn), CountOptions{})
		if err != nil {
			t.Fatalf("cut at %d: Count: %v", cut, err)
		}
		db, err := countDBOf(t, torn)
		if err != nil {
			t.Fatalf("cut at %d: buntdb refuses it: %v", cut, err)
		}
		if got.Counts != db {
			t.Fatalf("cut at %d: Count %+v, buntdb %+v", cut, got.Counts, db)
		}
		if got.Bytes+got.TornTail != int64(cut) {
			t.Fatalf("cut at %d: %d + %d bytes", cut, got.Bytes, got.TornTail)
		}
		if got.Counts != want {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("control: no cut changed the counts (the drop of #c1 was never torn)")
	}
}

// TestCommands: expiries (absolute past and future, relative to the file's time), flushdb, deletes of
// keys never set, rewrites of a key, nul bytes; the counter and buntdb agree, and each case has a value
// that differs from the naive count.
func TestCommands(t *testing.T) {
	cmd := func(parts ...string) string {
		s := fmt.Sprintf("*%d\r\n", len(parts))
		for _, p := range parts {
			s += fmt.Sprintf("$%d\r\n%s\r\n", len(p), p)
		}
		return s
	}
	future, past := fmt.Sprint(time.Now().Add(time.Hour).Unix()), fmt.Sprint(time.Now().Add(-time.Hour).Unix())
	tests := []struct {
		name string
		data string
		want Counts
	}{
		{"rewrite", cmd("set", "account.exists a", "1") + cmd("set", "account.exists a", "1"), Counts{Accounts: 1}},
		{"delete unknown", cmd("del", "account.exists zz") + cmd("set", "1 abc", "{}"), Counts{Channels: 1}},
		{"expired", cmd("set", "account.exists a", "1") + cmd("set", "account.exists a", "1", "ae", past), Counts{}},
		{"pending", cmd("set", "account.exists a", "1", "ae", future) + cmd("set", "account.exists b", "1"), Counts{Accounts: 1, PendingAccounts: 1}},
		{"relative", cmd("set", "account.exists a", "1", "ex", "3600"), Counts{PendingAccounts: 1}},
		{"flushdb", cmd("set", "account.exists a", "1") + cmd("flushdb") + cmd("set", "1 x", "{}"), Counts{Channels: 1}},
		{"nul bytes", "\x00\x00" + cmd("SET", "account.exists a", "1") + "\x00", Counts{Accounts: 1}},
		{"schema", cmd("set", SchemaVersionKey, "23") + cmd("set", SchemaVersionKey, "24"), Counts{Schema: "24"}},
		{"other keys", cmd("set", "account.name a", "A") + cmd("set", "2 purge", "{}"), Counts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Count(strings.NewReader(tt.data), CountOptions{})
			if err != nil || got.Counts != tt.want {
				t.Fatalf("Count = %+v, %v; want %+v", got.Counts, err, tt.want)
			}
			db, err := countDBOf(t, []byte(tt.data))
			if err != nil || db != tt.want {
				t.Fatalf("buntdb = %+v, %v; want %+v", db, err, tt.want)
			}
		})
	}
}

// TestInvalid: what buntdb refuses to open, the counter refuses with ErrInvalid.
func TestInvalid(t *testing.T) {
	for _, data := range []string{
		"ircd.db bytes\n",
		"*1\r\n$3\r\nget\r\n",
		"*2\r\n$3\r\nset\r\n$1\r\na\r\n",
		"*3\r\n$3\r\nset\r\n$1\r\na\r\n$1\r\nbX\n",
		"*5\r\n$3\r\nset\r\n$1\r\na\r\n$1\r\nb\r\n$2\r\nzz\r\n$1\r\n1\r\n",
	} {
		if _, err := countDBOf(t, []byte(data)); err == nil {
			t.Errorf("%q: buntdb opens it", data)
		}
		if _, err := Count(strings.NewReader(data), CountOptions{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: Count error %v, want ErrInvalid", data, err)
		}
	}
}

// TestCountMemoryIsBounded: 256 MiB of rewrites of the same 1,000 accounts (an append-only file that grew
// without shrinking) is counted with the heap growing by far less than the stream. The bound is generous;
// the measured growth is logged.
func TestCountMemoryIsBounded(t *testing.T) {
	var one bytes.Buffer
	value := strings.Repeat("v", 4096)
	for i := range 1000 {
		fmt.Fprintf(&one, "*3\r\n$3\r\nset\r\n$%d\r\naccount.exists a%d\r\n$%d\r\n%s\r\n", len(fmt.Sprintf("account.exists a%d", i)), i, len(value), value)
	}
	const total = 256 << 20
	r := io.LimitReader(&repeater{b: one.Bytes()}, int64(total/one.Len()*one.Len()))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done, peakc := make(chan struct{}), make(chan uint64)
	go func() {
		peak := uint64(0)
		for {
			select {
			case <-done:
				peakc <- peak
				return
			case <-time.After(10 * time.Millisecond):
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}
		}
	}()
	got, err := Count(r, CountOptions{})
	close(done)
	peak := <-peakc
	runtime.ReadMemStats(&after)
	if err != nil || got.Accounts != 1000 {
		t.Fatalf("Count = %+v, %v", got, err)
	}
	growth := int64(max(peak, after.HeapAlloc)) - int64(before.HeapAlloc)
	t.Logf("counted %d MiB; heap grew by at most %.1f MiB", got.Bytes>>20, float64(growth)/(1<<20))
	if growth > 32<<20 {
		t.Fatalf("heap grew by %d bytes counting a %d byte stream", growth, got.Bytes)
	}
}

type repeater struct {
	b   []byte
	off int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off = (r.off + n) % len(r.b)
	return n, nil
}
