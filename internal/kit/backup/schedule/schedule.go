package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinInterval is the shortest @every interval accepted: a backup is a Job moving a whole database, and a
// schedule that could start one every second is a mistake, not a wish.
const MinInterval = time.Minute

// ErrInvalid wraps every refusal of a schedule expression, so callers can tell a user's mistake (a
// condition, no retry) from anything else.
var ErrInvalid = errors.New("invalid schedule")

// parser reads the five standard fields (minute, hour, day of month, month, day of week) and descriptors
// (@daily, @hourly, @every 6h...). No seconds field: cron's Second option is left out on purpose.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a parsed schedule expression, always in UTC.
type Schedule struct {
	spec  string
	sched cron.Schedule
}

// Parse reads spec: five cron fields in UTC ("0 3 * * *") or a descriptor (@yearly, @monthly, @weekly,
// @daily, @midnight, @hourly, @every <duration> of at least MinInterval). A seconds field, a time zone
// prefix (TZ= or CRON_TZ=: the schedule is UTC, so the same expression means the same instant on every
// cluster) and anything cron cannot read are refused with an error wrapping ErrInvalid.
func Parse(spec string) (*Schedule, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalid)
	}
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return nil, fmt.Errorf("%w: %q: no time zone prefix, schedules are in UTC", ErrInvalid, spec)
	}
	if !strings.HasPrefix(s, "@") {
		if n := len(strings.Fields(s)); n != 5 {
			return nil, fmt.Errorf("%w: %q has %d fields, want 5 (minute hour day-of-month month day-of-week; no seconds field)",
				ErrInvalid, spec, n)
		}
	}
	sched, err := parser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalid, spec, err)
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok && every.Delay < MinInterval {
		return nil, fmt.Errorf("%w: %q: @every needs at least %s", ErrInvalid, spec, MinInterval)
	}
	return &Schedule{spec: s, sched: sched}, nil
}

// Next is the first run strictly after t, in UTC.
func (s *Schedule) Next(t time.Time) time.Time {
	return s.sched.Next(t.UTC()).UTC()
}

// intervalSamples is how many consecutive runs Interval looks at: enough to see every gap of a schedule
// whose pattern repeats within a year of monthly runs (a day of month that some months lack).
const intervalSamples = 64

// Interval is the schedule's nominal interval: the longest gap between consecutive runs among the next
// intervalSamples runs after from. For "0 3 * * 1-5" it is three days (Friday to Monday), which is what
// a staleness alert must allow; for @every 6h it is 6h.
func (s *Schedule) Interval(from time.Time) time.Duration {
	var longest time.Duration
	t := s.Next(from)
	for range intervalSamples {
		n := s.Next(t)
		if n.IsZero() {
			break
		}
		longest = max(longest, n.Sub(t))
		t = n
	}
	return longest
}

// maxCatchUp bounds the runs Due steps over to find the latest missed one: a minutely schedule missed
// for a year is half a million; after this many the newest run found is taken.
const maxCatchUp = 1 << 20

// Due says whether a Backup is due at now for a schedule whose last run was last (its creation when it
// never ran); when it is, run is the latest run at or before now (the one the Backup stands for, and
// what names it), and next is the first run after now. Runs missed while the operator was down give ONE
// Backup, not one per missed run. When nothing is due, next is the coming run.
func (s *Schedule) Due(last, now time.Time) (due bool, run, next time.Time) {
	first := s.Next(last)
	if first.IsZero() || first.After(now) {
		return false, time.Time{}, first
	}
	run = first
	for range maxCatchUp {
		n := s.Next(run)
		if n.IsZero() || n.After(now) {
			return true, run, n
		}
		run = n
	}
	return true, run, s.Next(now)
}
