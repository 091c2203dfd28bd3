package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The postgres workload's own measurement (issue 35): creates at several session budgets in one run. For
// each budget S, the floor with a pool of S sessions and the operator with the connection's
// spec.maxSessions S converge the same N new databases, each on a fresh control plane, with the harness's
// floorRun and operatorRun.

// pgMaxSessions is the largest spec.maxSessions the API accepts (PostgresConnection's validation).
const pgMaxSessions = 64

var (
	pgSessionPoints = sessionList{1, 4, 8}
	pgPointSize     = flag.Int("postgres-session-size", 200,
		"PostgresDatabase: databases each session point converges (at most 1000; 0: no session points).")
)

func init() {
	flag.Var(&pgSessionPoints, "postgres-session-points",
		"PostgresDatabase: session budgets, separated by commas, at each of which the floor (a pool of S sessions) and the "+
			"operator (spec.maxSessions: S) converge -postgres-session-size new databases, in the same run (empty: none).")
}

// sessionList is a flag of session budgets: "1,4,8", each 1 to 64 (spec.maxSessions's range) and given
// once, in the order given; empty for none.
type sessionList []int

func (l *sessionList) String() string {
	if l == nil {
		return ""
	}
	return joinInts(*l)
}

func (l *sessionList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > pgMaxSessions {
			return fmt.Errorf("%q is not a session budget (1 to %d, the range of spec.maxSessions)", f, pgMaxSessions)
		}
		if slices.Contains(out, n) {
			return fmt.Errorf("%d is given twice", n)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

// sessionPoints are the creates at each session budget, in the order measured.
type sessionPoints struct {
	N      int
	Points []sessionPoint
}

// sessionPoint is the floor and the operator converging N new databases with S sessions each.
type sessionPoint struct {
	Sessions        int
	Floor, Operator time.Duration
	// FloorCounters and Counters are the server log's counts (Counters): over the floor's run, and over the
	// operator's from its first create until it is idle.
	FloorCounters, Counters map[string]float64
	// OperatorCPU is the operator's CPU seconds from the first create to convergence.
	OperatorCPU float64
}

// Measure converges -postgres-session-size databases at each budget of -postgres-session-points: the
// floor's run, then the operator's, each on a fresh control plane, with that budget. Every run's Prepare
// drops what the run before made under the same names. The budget is -postgres-sessions again afterwards.
func (w *postgresWorkload) Measure(ctx context.Context, r *workloadRun) (extra, error) {
	n := r.info.size(*pgPointSize)
	if len(pgSessionPoints) == 0 || n == 0 {
		return nil, nil
	}
	defer w.setBudget(0)
	res := &sessionPoints{N: n}
	for _, s := range pgSessionPoints {
		p, err := w.measureSessions(ctx, r, s, n)
		if err != nil {
			return res, fmt.Errorf("session point S=%d, N=%d: %w", s, n, err)
		}
		res.Points = append(res.Points, p)
	}
	return res, nil
}

// measureSessions is one session point: its logs and profiles go to sessions-<S> in the workload's log
// directory.
func (w *postgresWorkload) measureSessions(ctx context.Context, r *workloadRun, s, n int) (sessionPoint, error) {
	p := sessionPoint{Sessions: s}
	pr := *r
	pr.logDir = filepath.Join(r.logDir, fmt.Sprintf("sessions-%d", s))
	if err := os.MkdirAll(pr.logDir, 0o755); err != nil {
		return p, err
	}
	w.setBudget(s)
	before, err := w.Counters()
	if err != nil {
		return p, err
	}
	if p.Floor, _, err = pr.floorRun(ctx, n); err != nil {
		return p, fmt.Errorf("floor: %w", err)
	}
	after, err := w.Counters()
	if err != nil {
		return p, err
	}
	p.FloorCounters = counted(after, before)
	conv := convergence{N: n}
	if err := pr.operatorRun(ctx, n, r.Args, &conv, nil); err != nil {
		return p, fmt.Errorf("operator: %w", err)
	}
	p.Operator, p.Counters, p.OperatorCPU = conv.Operator, conv.Counters, conv.CPU["operator"]
	r.logf("postgres sessions S=%d N=%d: floor %s, operator %s (%.2fx floor), SQL statements/database %s (floor %s)", s, n,
		p.Floor.Round(time.Millisecond), p.Operator.Round(time.Millisecond), p.Operator.Seconds()/p.Floor.Seconds(),
		per(p.Counters["SQL statements"], n), per(p.FloorCounters["SQL statements"], n))
	return p, nil
}

// perSecond is n over d, per second.
func perSecond(n int, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(n)/d.Seconds())
}

func (sp *sessionPoints) render(b *bytes.Buffer) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	budgets := make([]int, len(sp.Points))
	for i, p := range sp.Points {
		budgets[i] = p.Sessions
	}
	w("\n#### Creates at each session budget (N = %d, same run)\n\n", sp.N)
	w("%s\n", para(fmt.Sprintf("For each budget S (`-postgres-session-points=%s`), in turn: the floor with a pool of S "+
		"sessions of the connection's login, then the operator with the connection's `spec.maxSessions: S`, each on a "+
		"fresh control plane, converging the same %d new databases (`-postgres-session-size`; each run first drops, as "+
		"the superuser, what the run before made under the same names). *Databases/s* is N over the time to converge. "+
		"The SQL counts are the server log's: over the floor's run, and over the operator's from its first create "+
		"until it is idle. *Logins* are the sessions each side opened: the floor's pool opens at most S; the "+
		"operator's first session, opened when it checked the connection, is before the clock.", joinInts(budgets), sp.N)))
	w("| S | floor | floor: databases/s | operator | operator: databases/s | **operator / floor** | " +
		"SQL statements / database: floor, operator | writing ones: floor, operator | logins in all: floor, operator | operator CPU |\n")
	w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range sp.Points {
		ratio := "-"
		if p.Floor > 0 {
			ratio = fmt.Sprintf("%.2f", p.Operator.Seconds()/p.Floor.Seconds())
		}
		pair := func(k string) string { return per(p.FloorCounters[k], sp.N) + ", " + per(p.Counters[k], sp.N) }
		w("| %d | %s | %s | %s | %s | **%s** | %s | %s | %s | %.1f s |\n", p.Sessions, ms(p.Floor), perSecond(sp.N, p.Floor),
			ms(p.Operator), perSecond(sp.N, p.Operator), ratio, pair("SQL statements"), pair("writing SQL statements"),
			fmt.Sprintf("%.0f, %.0f", p.FloorCounters["logins"], p.Counters["logins"]), p.OperatorCPU)
	}
}
