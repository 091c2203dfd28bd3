// Command bench-backup is `make bench-backup`: it measures the backup programs the Jobs run, on real
// servers on 127.0.0.1 (versitygw, internal/testutil/s3test; PostgreSQL, internal/postgres/postgrestest),
// at the sizes it is given. For each PostgreSQL size it fills a database, then runs the backup Job's
// container (pg_dump -Fc into `platform-operator backup put`, as internal/kit/backup/jobs builds it), the
// drill Job's (`backup verify` into an empty scratch database) and the restore Job's (`backup restore`
// into an empty database); for each ircd.db size it writes a datastore with ergo's keys and runs the
// datastore Job's container (`backup put --file`), `backup verify` (buntdb opens the download) and
// `backup get --file`. Each container runs here through internal/testutil/jobrun, as the tests run it.
// It times each step and samples /proc for the peak resident set (VmHWM) and CPU time of every process
// the step runs (the operator's program, pg_dump, pg_restore), and prints one table; -out writes it into
// docs/performance.md between its bench-backup markers. Everything it writes goes under $TMPDIR and is
// deleted at the end. -stream-sizes measures the program alone: a put of a generated stream from its
// standard input and a get back, with each process's exact peak RSS (wait4).
//
//	go run ./hack/bench-backup [-operator bin/platform-operator] [-pg-sizes 16MiB] [-ircd-sizes 10MB] [-stream-sizes 64MiB,4GiB] [-out FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	var o options
	flag.StringVar(&o.operator, "operator", "bin/platform-operator", "the operator's binary (the program the Jobs run)")
	pgSizes := flag.String("pg-sizes", "16MiB", "database sizes to measure, comma-separated (pg_database_size after the fill), e.g. 64MiB,1GiB; empty for none")
	ircdSizes := flag.String("ircd-sizes", "10MB", "ircd.db sizes to measure, comma-separated, e.g. 10MB,100MB; empty for none")
	streamSizes := flag.String("stream-sizes", "", "sizes of a generated stream put from standard input and got back, the program alone (exact peak RSS), e.g. 64MiB,4GiB; empty for none")
	flag.IntVar(&o.accounts, "accounts", 10000, "registered accounts in each ircd.db")
	flag.IntVar(&o.channels, "channels", 1000, "registered channels in each ircd.db")
	flag.StringVar(&o.out, "out", "", "write the report between the bench-backup markers of this file (docs/performance.md); empty prints only")
	flag.Parse()
	var err error
	if o.pgSizes, err = parseSizes(*pgSizes); err != nil {
		fmt.Fprintf(os.Stderr, "bench-backup: -pg-sizes: %v\n", err)
		os.Exit(2)
	}
	if o.ircdSizes, err = parseSizes(*ircdSizes); err != nil {
		fmt.Fprintf(os.Stderr, "bench-backup: -ircd-sizes: %v\n", err)
		os.Exit(2)
	}
	if o.streamSizes, err = parseSizes(*streamSizes); err != nil {
		fmt.Fprintf(os.Stderr, "bench-backup: -stream-sizes: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "bench-backup: %v\n", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	operator                        string
	pgSizes, ircdSizes, streamSizes []int64
	accounts, channels              int
	out                             string
}

// parseSizes reads "64MiB,1GiB,10MB": a number and a unit (B, KB, MB, GB: powers of 1000; KiB, MiB, GiB:
// powers of 1024).
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := parseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseFloat(num, 64)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("size %q: want a positive number and a unit (MiB, GiB, MB...)", s)
			}
			return int64(n * float64(u.mult)), nil
		}
	}
	return 0, fmt.Errorf("size %q has no unit (B, KB, MB, GB, KiB, MiB, GiB)", s)
}

// human is a size the way the report's sizes are given.
func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
}
