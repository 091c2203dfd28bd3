package memtrim

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	const exe = "/manager"
	tests := []struct {
		name    string
		in      string
		want    []Mapping
		wantErr string
	}{
		{
			name: "a static Go binary, heap, anonymous and vdso",
			in: `00400000-02b7e000 r-xp 00000000 fe:00 123                                /manager
02b7e000-05e1c000 r--p 0277e000 fe:00 123                                /manager
05e1c000-05ec4000 rw-p 05a1c000 fe:00 123                                /manager
05ec4000-05f1c000 rw-p 00000000 00:00 0 
c000000000-c004000000 rw-p 00000000 00:00 0 
7ffd4b3f2000-7ffd4b3f4000 r-xp 00000000 00:00 0                          [vdso]
`,
			want: []Mapping{
				{Start: 0x400000, End: 0x2b7e000, Perms: "r-xp", Path: exe},
				{Start: 0x2b7e000, End: 0x5e1c000, Perms: "r--p", Path: exe},
				{Start: 0x5e1c000, End: 0x5ec4000, Perms: "rw-p", Path: exe},
				{Start: 0x5ec4000, End: 0x5f1c000, Perms: "rw-p"},
				{Start: 0xc000000000, End: 0xc004000000, Perms: "rw-p"},
				{Start: 0x7ffd4b3f2000, End: 0x7ffd4b3f4000, Perms: "r-xp", Path: "[vdso]"},
			},
		},
		{
			name: "paths with spaces, a colon and a deleted file",
			in: `00400000-00401000 r-xp 00000000 fe:00 7 /opt/my operator/manager: v2 (deleted)
`,
			want: []Mapping{{Start: 0x400000, End: 0x401000, Perms: "r-xp", Path: "/opt/my operator/manager: v2 (deleted)"}},
		},
		{
			name: "smaps: Anonymous and Swap kept, other fields passed over",
			in: `55ee5766c000-55ee5766e000 r--p 00000000 fe:00 247278                     /usr/bin/head
Size:                  8 kB
Rss:                   8 kB
Anonymous:             4 kB
Swap:                  8 kB
VmFlags: rd mr mw me
55ee5766e000-55ee57674000 r-xp 00002000 fe:00 247278                     /usr/bin/head
Size:                 24 kB
Anonymous:             0 kB
THPeligible:           0
`,
			want: []Mapping{
				{Start: 0x55ee5766c000, End: 0x55ee5766e000, Perms: "r--p", Path: "/usr/bin/head", Anonymous: 4096, Swap: 8192},
				{Start: 0x55ee5766e000, End: 0x55ee57674000, Perms: "r-xp", Path: "/usr/bin/head"},
			},
		},
		{name: "empty", in: "", want: nil},
		{name: "too few fields", in: "00400000-00401000 r-xp 00000000\n", wantErr: "want at least 5"},
		{name: "no range", in: "00400000 r-xp 00000000 fe:00 1 /x\n", wantErr: "address range"},
		{name: "bad address", in: "0040zz00-00401000 r-xp 00000000 fe:00 1 /x\n", wantErr: "start address"},
		{name: "end before start", in: "00402000-00401000 r-xp 00000000 fe:00 1 /x\n", wantErr: "before start"},
		{name: "bad permissions", in: "00400000-00401000 rx 00000000 fe:00 1 /x\n", wantErr: "permissions"},
		{name: "a field before any mapping", in: "Anonymous: 0 kB\n", wantErr: "before any mapping"},
		{name: "a field that is not a number", in: "00400000-00401000 r-xp 00000000 fe:00 1 /x\nAnonymous: lots kB\n", wantErr: "invalid syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMaps(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadOnlyOf(t *testing.T) {
	maps := []Mapping{
		{Start: 0x1000, End: 0x2000, Perms: "r-xp", Path: "/manager"},
		{Start: 0x2000, End: 0x3000, Perms: "r--p", Path: "/manager"},
		{Start: 0x3000, End: 0x4000, Perms: "rw-p", Path: "/manager"},
		{Start: 0x4000, End: 0x5000, Perms: "r--p", Path: "/manager-other"},
		{Start: 0x5000, End: 0x6000, Perms: "r-xp", Path: "/manager (deleted)"},
		{Start: 0x6000, End: 0x7000, Perms: "r-xp"},
		{Start: 0x7000, End: 0x8000, Perms: "r-xs", Path: "/manager"},
	}
	got := ReadOnlyOf(maps, "/manager")
	want := []Mapping{maps[0], maps[1], maps[4], maps[6]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestFromFile(t *testing.T) {
	tests := []struct {
		m    Mapping
		want bool
	}{
		{Mapping{}, true},
		{Mapping{Anonymous: 4096}, false},
		{Mapping{Swap: 4096}, false},
	}
	for _, tt := range tests {
		if got := tt.m.FromFile(); got != tt.want {
			t.Errorf("%+v: FromFile %v, want %v", tt.m, got, tt.want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	in := "Name:\tmanager\nVmRSS:\t   79528 kB\nRssAnon:\t   20112 kB\nRssFile:\t   59416 kB\nRssShmem:\t       0 kB\n"
	got, err := ParseStatus(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Status{RSS: 79528 * 1024, RSSAnon: 20112 * 1024, RSSFile: 59416 * 1024}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := ParseStatus(strings.NewReader("VmRSS:\t1 kB\n")); err == nil {
		t.Fatal("a status without RssAnon and RssFile parsed")
	}
	if _, err := ParseStatus(strings.NewReader("VmRSS:\tx kB\nRssAnon: 1 kB\nRssFile: 1 kB\n")); err == nil {
		t.Fatal("a status with a bad number parsed")
	}
}
