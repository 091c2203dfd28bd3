package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
)

// stream measures the program alone: `backup put` of size bytes from its standard input (no producer, no
// facts), then `backup get` of the artifact to standard output, each process's peak RSS exact
// (wait4's ru_maxrss: neither has a child). It separates the program's memory from pg_dump's and
// PostgreSQL's speed, at sizes a database fill would take too long to reach.
func (b *bench) stream(ctx context.Context, size int64) error {
	fmt.Fprintf(os.Stderr, "stream, %s\n", human(size))
	storeFile := filepath.Join(b.dir, "stream-store.json")
	doc, err := json.Marshal(jobs.StoreFile(b.store))
	if err != nil {
		return err
	}
	if err := os.WriteFile(storeFile, doc, 0o600); err != nil {
		return err
	}
	name := fmt.Sprintf("stream-%dmib", size>>20)
	bk := newBackup(backupv1.SourcePostgresDatabase, name)
	args := []string{"backup", "put", "--store-config", storeFile, "--namespace", namespace, "--kind",
		string(backupv1.SourcePostgresDatabase), "--name", name, "--id", bk.Status.ID, "--format", string(backup.FormatPgDumpCustom)}
	put, putRSS, putCPU, err := b.exact(ctx, args, &pattern{n: size}, io.Discard)
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	b.record(row{what: "stream", size: size, artifact: size, step: "`backup put` from standard input", wall: put,
		procs: map[string]usage{"platform-operator": {name: "platform-operator", hwmKiB: putRSS, cpu: putCPU}}})
	args[1] = "get"
	args = args[:len(args)-2] // get has no --format
	get, getRSS, getCPU, err := b.exact(ctx, args, nil, io.Discard)
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	b.record(row{what: "stream", size: size, artifact: size, step: "`backup get` to standard output", wall: get,
		procs: map[string]usage{"platform-operator": {name: "platform-operator", hwmKiB: getRSS, cpu: getCPU}}})
	return b.repo.Delete(ctx, backup.Ref{Namespace: namespace, Kind: string(backupv1.SourcePostgresDatabase), Name: name, ID: bk.Status.ID})
}

// exact runs the program with args, stdin and stdout, and returns its wall time, peak RSS (KiB) and CPU
// time.
func (b *bench) exact(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) (time.Duration, int64, time.Duration, error) {
	cmd := exec.CommandContext(ctx, b.binary, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", jobs.AccessKeyIDEnv + "=" + b.s3.AccessKeyID, jobs.SecretAccessKeyEnv + "=" + b.s3.SecretAccessKey}
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr limited
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w: %s", err, stderr.b)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, 0, errors.New("no rusage")
	}
	return wall, ru.Maxrss, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// pattern is n bytes generated as they are read (never held whole): a counter's bytes, not zeros, so no
// layer can shortcut them.
type pattern struct {
	n, off int64
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		x := p.off + int64(i)
		b[i] = byte(x ^ x>>8 ^ x>>16)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// limited keeps the first 4 KiB written to it.
type limited struct{ b []byte }

func (l *limited) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}
