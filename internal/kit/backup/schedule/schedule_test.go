package schedule

import (
	"errors"
	"testing"
	"time"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParse(t *testing.T) {
	tests := []struct {
		spec string
		ok   bool
	}{
		{"0 3 * * *", true},
		{"*/15 * * * *", true},
		{"0 3 * * 1-5", true},
		{"  0 3 * * *  ", true},
		{"@daily", true},
		{"@hourly", true},
		{"@weekly", true},
		{"@monthly", true},
		{"@yearly", true},
		{"@midnight", true},
		{"@every 6h", true},
		{"@every 1m", true},
		{"@every 59s", false},  // below MinInterval
		{"@every 1s", false},   // below MinInterval
		{"0 0 3 * * *", false}, // a seconds field
		{"0 3 * *", false},     // four fields
		{"", false},
		{"   ", false},
		{"TZ=Europe/Oslo 0 3 * * *", false},
		{"CRON_TZ=UTC 0 3 * * *", false},
		{"61 3 * * *", false},
		{"0 25 * * *", false},
		{"0 3 * * 8", false},
		{"@fortnightly", false},
		{"@every banana", false},
		{"every day", false},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if tt.ok {
				if err != nil || s == nil {
					t.Fatalf("Parse(%q) = %v, want ok", tt.spec, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q) accepted, want an error", tt.spec)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", tt.spec, err)
			}
		})
	}
}

func TestNextIsUTC(t *testing.T) {
	s, err := Parse("0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	oslo := time.FixedZone("CET", 3600)
	// 02:30 in CET is 01:30 UTC: the next 03:00 UTC is the same UTC day, not 03:00 CET.
	got := s.Next(time.Date(2026, 1, 10, 2, 30, 0, 0, oslo))
	if want := ts("2026-01-10T03:00:00Z"); !got.Equal(want) || got.Location() != time.UTC {
		t.Fatalf("Next = %v, want %v in UTC", got, want)
	}
}

func TestDue(t *testing.T) {
	tests := []struct {
		name      string
		spec      string
		last, now string
		due       bool
		run       string
		next      string
	}{
		{"before the first run", "0 3 * * *", "2026-01-10T01:00:00Z", "2026-01-10T02:59:59Z", false, "", "2026-01-10T03:00:00Z"},
		{"exactly at the run", "0 3 * * *", "2026-01-10T01:00:00Z", "2026-01-10T03:00:00Z", true, "2026-01-10T03:00:00Z", "2026-01-11T03:00:00Z"},
		{"just after the run", "0 3 * * *", "2026-01-10T01:00:00Z", "2026-01-10T03:00:01Z", true, "2026-01-10T03:00:00Z", "2026-01-11T03:00:00Z"},
		{"ran at this tick already", "0 3 * * *", "2026-01-10T03:00:00Z", "2026-01-10T03:00:30Z", false, "", "2026-01-11T03:00:00Z"},
		// The operator was down for five days: one backup now, then the next regular run.
		{"missed runs give one", "0 3 * * *", "2026-01-05T03:00:00Z", "2026-01-10T12:00:00Z", true, "2026-01-10T03:00:00Z", "2026-01-11T03:00:00Z"},
		{"every 6h not yet", "@every 6h", "2026-01-10T00:00:00Z", "2026-01-10T05:59:59Z", false, "", "2026-01-10T06:00:00Z"},
		{"every 6h due", "@every 6h", "2026-01-10T00:00:00Z", "2026-01-10T06:00:00Z", true, "2026-01-10T06:00:00Z", "2026-01-10T12:00:00Z"},
		{"missed minutely runs: the latest one", "* * * * *", "2026-01-01T00:00:00Z", "2026-01-10T12:00:30Z", true, "2026-01-10T12:00:00Z", "2026-01-10T12:01:00Z"},
		{"weekdays skip the weekend", "0 3 * * 1-5", "2026-01-09T03:00:00Z", "2026-01-10T03:00:00Z", false, "", "2026-01-12T03:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			due, run, next := s.Due(ts(tt.last), ts(tt.now))
			wantRun := time.Time{}
			if tt.run != "" {
				wantRun = ts(tt.run)
			}
			if due != tt.due || !run.Equal(wantRun) || !next.Equal(ts(tt.next)) {
				t.Fatalf("Due(%s, %s) = %v, %v, %v; want %v, %s, %s", tt.last, tt.now, due, run, next, tt.due, tt.run, tt.next)
			}
		})
	}
}

func TestInterval(t *testing.T) {
	tests := []struct {
		spec string
		want time.Duration
	}{
		{"0 3 * * *", 24 * time.Hour},
		{"@daily", 24 * time.Hour},
		{"@hourly", time.Hour},
		{"*/15 * * * *", 15 * time.Minute},
		{"@every 6h", 6 * time.Hour},
		{"0 3 * * 1-5", 72 * time.Hour},
		{"0 0,12 * * *", 12 * time.Hour},
		{"0 0 1 * *", 31 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Interval(ts("2026-01-01T00:00:00Z")); got != tt.want {
				t.Fatalf("Interval = %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 3 * * *", "@every 6h", "0 0 3 * * *", "TZ=UTC @daily", "*/0 * * * *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec)
		if err != nil {
			return
		}
		now := ts("2026-01-01T00:00:00Z")
		next := s.Next(now)
		if !next.IsZero() && !next.After(now) {
			t.Fatalf("%q: Next(%v) = %v, not after", spec, now, next)
		}
	})
}
