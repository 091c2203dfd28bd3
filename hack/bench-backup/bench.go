package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil/jobrun"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

const (
	namespace   = "bench"
	bucket      = "bench"
	storeSecret = "store-credentials"
	// sampleEvery is how often /proc is read during a step.
	sampleEvery = 10 * time.Millisecond
)

// bench holds the servers and what every step shares.
type bench struct {
	o       options
	binary  string
	dir     string
	s3      *s3test.Server
	pg      *postgrestest.Server
	pgBin   string
	store   *backupv1.BackupStore
	objects client.Client
	repo    *backup.Repository
	rows    []row
}

// row is one step's measurement.
type row struct {
	what       string // "PostgreSQL" or "ircd.db"
	size       int64  // the data's size: pg_database_size, or the file's
	artifact   int64  // the artifact's size in the store
	step       string
	wall       time.Duration
	procs      map[string]usage
	throughput float64 // size / wall, MiB/s
}

func run(ctx context.Context, o options) error {
	bin, err := filepath.Abs(o.operator)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the operator's binary: %w (make build)", err)
	}
	dir, err := os.MkdirTemp("", "bench-backup-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	b := &bench{o: o, binary: bin, dir: dir}
	env := describeMachine(ctx, bin)
	if env.baselineKiB, err = baseline(ctx, bin); err != nil {
		return err
	}
	start := time.Now()

	fmt.Fprintln(os.Stderr, "starting versitygw and PostgreSQL on 127.0.0.1")
	if b.s3, err = s3test.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = b.s3.Stop() }()
	cfg, err := b.s3.CreateBucket(ctx, bucket, "")
	if err != nil {
		return err
	}
	store, err := objectstore.New(cfg)
	if err != nil {
		return err
	}
	scoped, err := store.Scope(namespace)
	if err != nil {
		return err
	}
	b.repo = backup.NewRepository(scoped)
	if b.pg, err = postgrestest.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = b.pg.Stop() }()
	if b.pgBin, err = postgrestest.BinDir(); err != nil {
		return err
	}
	b.store = &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: namespace},
		Spec: backupv1.BackupStoreSpec{Endpoint: b.s3.Endpoint, Bucket: bucket, Region: "us-east-1",
			Credentials: backupv1.BackupStoreCredentials{SecretName: storeSecret}}}
	b.objects = fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: storeSecret, Namespace: namespace},
		Data:       map[string][]byte{"accessKeyID": []byte(b.s3.AccessKeyID), "secretAccessKey": []byte(b.s3.SecretAccessKey)},
	}).Build()

	for _, size := range o.pgSizes {
		if err := b.postgres(ctx, size); err != nil {
			return fmt.Errorf("PostgreSQL at %s: %w", human(size), err)
		}
	}
	for _, size := range o.ircdSizes {
		if err := b.datastore(ctx, size); err != nil {
			return fmt.Errorf("ircd.db at %s: %w", human(size), err)
		}
	}
	for _, size := range o.streamSizes {
		if err := b.stream(ctx, size); err != nil {
			return fmt.Errorf("stream of %s: %w", human(size), err)
		}
	}
	env.took = time.Since(start)
	env.loadEnd = loadAverage()
	report := render(o, env, b.rows)
	fmt.Print(report)
	if o.out != "" {
		return writeBetweenMarkers(o.out, report)
	}
	return nil
}

// newBackup is a Backup of kind/name as the controller would hold it once its Job ran: a uid and a
// creation time give its id (jobs.ID), also set as status.id for the drill.
func newBackup(kind backupv1.SourceKind, name string) *backupv1.Backup {
	bk := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
		UID: types.UID(fmt.Sprintf("%08x-bench", time.Now().UnixNano()&0xffffffff)), CreationTimestamp: metav1.Now()},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: kind, Name: name}}}
	bk.Status.ID = jobs.ID(bk)
	return bk
}

// add creates objects in the fake API the containers read their Secrets and ConfigMaps from.
func (b *bench) add(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		if err := b.objects.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) secret(name, url string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Data: map[string][]byte{jobs.DatabaseURLKey: []byte(url)}}
}

// local is the kubelet stand-in for a container: the operator's binary for jobs.Binary and the image's
// /manager, this machine's PostgreSQL tools on PATH.
func (b *bench) local(volumes map[string]string) jobrun.Local {
	dir, _ := os.MkdirTemp(b.dir, "pod-")
	return jobrun.Local{Reader: b.objects, Binary: b.binary, Path: b.pgBin + ":/usr/bin:/bin",
		Commands: map[string]string{jobs.OperatorCommand: b.binary}, Dir: dir, Volumes: volumes}
}

// step runs job's container and measures it.
func (b *bench) step(ctx context.Context, name string, job *batchv1.Job, volumes map[string]string) (time.Duration, map[string]usage, error) {
	fmt.Fprintf(os.Stderr, "  %s\n", name)
	s := startSampler(sampleEvery)
	start := time.Now()
	res, err := b.local(volumes).Run(ctx, job)
	wall := time.Since(start)
	procs := s.finish()
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.ExitCode != 0 {
		return 0, nil, fmt.Errorf("%s exited %d: %s %s", name, res.ExitCode, res.Output, res.Termination)
	}
	if _, ok := procs["platform-operator"]; !ok {
		return 0, nil, fmt.Errorf("%s: the sampler never saw the program (it ran %s)", name, wall)
	}
	return wall, procs, nil
}

// loadAverage is /proc/loadavg's three averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// machine is the report's environment table.
type machine struct {
	when, cpu, memory, os, kernel, postgres, pgDump, operator, loadStart, loadEnd string
	took                                                                          time.Duration
	// baselineKiB is the program's peak RSS when it does nothing (`backup help`).
	baselineKiB int64
}

// baseline is the peak RSS (wait4's ru_maxrss) of `platform-operator backup help`: what the program
// costs before it moves a byte, the Go runtime and the pages of the binary it touches.
func baseline(ctx context.Context, bin string) (int64, error) {
	cmd := exec.CommandContext(ctx, bin, "backup", "help")
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s backup help: %w: %s", bin, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, errors.New("no rusage")
	}
	return ru.Maxrss, nil
}

func describeMachine(ctx context.Context, bin string) machine {
	m := machine{when: time.Now().UTC().Format("2006-01-02 15:04 UTC"), loadStart: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				n++
			}
		}
		m.cpu = fmt.Sprintf("%s, %d cores", m.cpu, n)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int64
		_, _ = fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kib)
		m.memory = fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				m.os = strings.Trim(v, `"`)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	out := func(name string, args ...string) string {
		b, err := exec.CommandContext(ctx, name, args...).Output()
		if err != nil {
			return "?"
		}
		return strings.TrimSpace(string(b))
	}
	if dir, err := postgrestest.BinDir(); err == nil {
		m.postgres = out(filepath.Join(dir, "postgres"), "--version")
		m.pgDump = out(filepath.Join(dir, "pg_dump"), "--version")
	}
	m.operator = bin
	if st, err := os.Stat(bin); err == nil {
		m.operator = fmt.Sprintf("`%s`, built %s", filepath.Base(bin), st.ModTime().UTC().Format("2006-01-02 15:04 UTC"))
	}
	return m
}

var errNoMarkers = errors.New("no bench-backup markers")

const (
	beginMarker = "<!-- bench-backup:begin: generated by `make bench-backup`; edit outside these markers -->"
	endMarker   = "<!-- bench-backup:end -->"
)

// writeBetweenMarkers replaces what lies between the markers of file with report.
func writeBetweenMarkers(file, report string) error {
	doc, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	s := string(doc)
	i := strings.Index(s, beginMarker)
	j := strings.Index(s, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s: %w (%q ... %q)", file, errNoMarkers, beginMarker, endMarker)
	}
	s = s[:i+len(beginMarker)] + "\n" + report + s[j:]
	return os.WriteFile(file, []byte(s), 0o644)
}
