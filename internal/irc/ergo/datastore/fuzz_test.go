package datastore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var bigLength = regexp.MustCompile(`[$*][0-9]{7,}`)

// FuzzCount: the counter reads what a backup is given (a tenant's datastore, or anything put as one). It
// never panics; what it accepts, buntdb opens with the same counts; a torn tail it reports is within the
// input. (Inputs the counter refuses are not handed to buntdb, which panics on some of them.)
func FuzzCount(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nset\r\n$16\r\naccount.exists a\r\n$1\r\n1\r\n"))
	f.Add([]byte("*3\r\n$3\r\nset\r\n$5\r\n1 abc\r\n$2\r\n{}\r\n*2\r\n$3\r\ndel\r\n$5\r\n1 abc\r\n"))
	f.Add([]byte("*5\r\n$3\r\nset\r\n$16\r\naccount.exists a\r\n$1\r\n1\r\n$2\r\nae\r\n$10\r\n9999999999\r\n"))
	f.Add([]byte("\x00*1\r\n$7\r\nflushdb\r\n*3\r\n$3\r\nset\r\n$1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Count(bytes.NewReader(data), CountOptions{})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if res.Bytes+res.TornTail != int64(len(data)) {
			t.Fatalf("%d + %d bytes of %d", res.Bytes, res.TornTail, len(data))
		}
		if bigLength.Match(data) {
			return // buntdb allocates a declared length before reading it: a fuzzer's 4 GB would kill the run
		}
		path := filepath.Join(t.TempDir(), "ircd.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := CountDB(path)
		if err != nil {
			t.Fatalf("the counter accepts %q, buntdb refuses it: %v", data, err)
		}
		if db != res.Counts {
			t.Fatalf("%q: counter %+v, buntdb %+v", data, res.Counts, db)
		}
	})
}
