package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// record adds a measured step and prints it as it comes.
func (b *bench) record(r row) {
	r.throughput = float64(r.size) / (1 << 20) / r.wall.Seconds()
	b.rows = append(b.rows, r)
	fmt.Fprintf(os.Stderr, "    %s in %s (%.1f MiB/s): %s\n", human(r.size), r.wall.Round(time.Millisecond), r.throughput, procsText(r.procs))
}

// order is the programs' order in a row.
var order = []string{"platform-operator", "pg_dump", "pg_restore"}

func procsText(procs map[string]usage) string {
	var parts []string
	for _, name := range order {
		if u, ok := procs[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f MiB, %.1f s CPU", name, float64(u.hwmKiB)/1024, u.cpu.Seconds()))
		}
	}
	return strings.Join(parts, "; ")
}

func peak(procs map[string]usage, name string) string {
	u, ok := procs[name]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(u.hwmKiB)/1024)
}

func cpu(procs map[string]usage, name string) string {
	u, ok := procs[name]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.1f s", u.cpu.Seconds())
}

// render is the report: the machine, then one table of every step.
func render(o options, m machine, rows []row) string {
	var w strings.Builder
	fmt.Fprintf(&w, "### Backup figures of the last run\n\n")
	var args []string
	if len(o.pgSizes) > 0 {
		var s []string
		for _, n := range o.pgSizes {
			s = append(s, human(n))
		}
		args = append(args, "PostgreSQL "+strings.Join(s, ", "))
	}
	if len(o.ircdSizes) > 0 {
		var s []string
		for _, n := range o.ircdSizes {
			s = append(s, fmt.Sprintf("%.0f MB", float64(n)/1e6))
		}
		args = append(args, fmt.Sprintf("ircd.db %s (%d accounts, %d channels)", strings.Join(s, ", "), o.accounts, o.channels))
	}
	if len(o.streamSizes) > 0 {
		var s []string
		for _, n := range o.streamSizes {
			s = append(s, human(n))
		}
		args = append(args, "stream "+strings.Join(s, ", "))
	}
	fmt.Fprintf(&w, "%s, `make bench-backup` (%s); took %s.\n\n", m.when, strings.Join(args, "; "), m.took.Round(time.Second))
	fmt.Fprintf(&w, "| | |\n|---|---|\n")
	for _, kv := range [][2]string{
		{"CPU", m.cpu}, {"memory", m.memory}, {"OS", m.os + ", Linux " + m.kernel},
		{"load average at the start", m.loadStart}, {"load average at the end", m.loadEnd},
		{"PostgreSQL server", m.postgres + " (postgrestest: fsync off, on the same disk)"}, {"pg_dump / pg_restore", m.pgDump},
		{"object store", "versitygw v1.8.0 (posix backend, same disk), http on 127.0.0.1"}, {"operator", m.operator},
		{"`platform-operator backup help`'s peak RSS", fmt.Sprintf("%.1f MiB (the program before it moves a byte)", float64(m.baselineKiB)/1024)},
	} {
		fmt.Fprintf(&w, "| %s | %s |\n", kv[0], kv[1])
	}
	fmt.Fprintf(&w, "\nPeak RSS is each process's VmHWM read from /proc every 10 ms")
	if len(o.streamSizes) > 0 {
		fmt.Fprintf(&w, " (for the stream rows: wait4's exact ru_maxrss and CPU times)")
	}
	fmt.Fprintf(&w, "; CPU is its user + system time. ")
	fmt.Fprintf(&w, "Throughput is the data's size (the database's `pg_database_size`, the file's size) over the wall time.\n\n")
	fmt.Fprintf(&w, "| data | size | artifact | step | wall time | throughput | peak RSS: `platform-operator` | its CPU | peak RSS: `pg_dump` / `pg_restore` | its CPU |\n")
	fmt.Fprintf(&w, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		tool, toolCPU := "–", "–"
		for _, name := range []string{"pg_dump", "pg_restore"} {
			if _, ok := r.procs[name]; ok {
				tool, toolCPU = name+" "+peak(r.procs, name), cpu(r.procs, name)
			}
		}
		fmt.Fprintf(&w, "| %s | %s | %s | %s | %.1f s | %.1f MiB/s | %s | %s | %s | %s |\n",
			r.what, human(r.size), human(r.artifact), r.step, r.wall.Seconds(), r.throughput,
			peak(r.procs, "platform-operator"), cpu(r.procs, "platform-operator"), tool, toolCPU)
	}
	return w.String()
}
