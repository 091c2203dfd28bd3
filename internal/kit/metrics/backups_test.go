package metrics

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

var backupScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(backupv1.AddToScheme(s))
	return s
}()

func tp(d time.Duration) *metav1.Time { t := ago(d); return &t }

// testBackup is a Backup of PostgresDatabase db in ns a, made by schedule sched when not empty.
func testBackup(name, sched string, phase backupv1.BackupPhase, started, completed time.Duration, size int64, drill *backupv1.BackupVerification) *backupv1.Backup {
	b := &backupv1.Backup{ObjectMeta: objectMeta("a", name, started),
		Spec:   backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "db"}, Store: "s"},
		Status: backupv1.BackupStatus{Phase: phase, StartTime: tp(started), Size: size, Verification: drill}}
	if completed > 0 {
		b.Status.CompletionTime = tp(completed)
	}
	if sched != "" {
		b.Labels = map[string]string{backupv1.LabelSchedule: sched}
	}
	return b
}

func backupCollector(objs ...client.Object) *BackupCollector {
	c := NewBackupCollector(fake.NewClientBuilder().WithScheme(backupScheme).WithObjects(objs...).Build(), nil)
	c.now = func() time.Time { return clock }
	return c
}

func TestBackupCollector(t *testing.T) {
	objs := []client.Object{
		// The older Completed one was drilled (Verified, 90 s to recover); the newest Completed one was not.
		testBackup("old", "nightly", backupv1.BackupCompleted, 50*time.Hour, 49*time.Hour, 100,
			&backupv1.BackupVerification{Result: backupv1.VerificationVerified, CompletionTime: tp(48 * time.Hour),
				RecoveryTime: &metav1.Duration{Duration: 90 * time.Second}}),
		testBackup("new", "nightly", backupv1.BackupCompleted, 26*time.Hour, 25*time.Hour, 300, nil),
		// The newest finished Backup of the schedule failed; a newer one is still running.
		testBackup("broken", "nightly", backupv1.BackupFailed, 2*time.Hour, time.Hour, 0, nil),
		testBackup("now", "nightly", backupv1.BackupRunning, 10*time.Minute, 0, 0, nil),
		// Another source, on demand, drilled and Failed.
		func() *backupv1.Backup {
			b := testBackup("ergo-1", "", backupv1.BackupCompleted, 3*time.Hour, 2*time.Hour, 7,
				&backupv1.BackupVerification{Result: backupv1.VerificationFailed, CompletionTime: tp(time.Hour)})
			b.Spec.Source = backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: "net"}
			return b
		}(),
		&backupv1.BackupSchedule{ObjectMeta: objectMeta("a", "nightly", 100*time.Hour),
			Spec: backupv1.BackupScheduleSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "db"},
				Store: "s", Schedule: "0 3 * * 1-5"}},
		&backupv1.BackupSchedule{ObjectMeta: objectMeta("a", "bad", 100*time.Hour),
			Spec: backupv1.BackupScheduleSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: "net"},
				Store: "s", Schedule: "0 0 3 * * *"}},
	}
	db := `{kind="PostgresDatabase",namespace="a",source="db"}`
	net := `{kind="ErgoNetwork",namespace="a",source="net"}`
	want := `
# HELP platform_operator_backup_last_success_timestamp_seconds Completion time (Unix seconds) of the newest Completed Backup of each source object.
# TYPE platform_operator_backup_last_success_timestamp_seconds gauge
platform_operator_backup_last_success_timestamp_seconds` + db + ` ` + ts(25*time.Hour) + `
platform_operator_backup_last_success_timestamp_seconds` + net + ` ` + ts(2*time.Hour) + `
# HELP platform_operator_backup_last_size_bytes Artifact size of the newest Completed Backup of each source object.
# TYPE platform_operator_backup_last_size_bytes gauge
platform_operator_backup_last_size_bytes` + db + ` 300
platform_operator_backup_last_size_bytes` + net + ` 7
# HELP platform_operator_backup_duration_seconds Start to completion of the newest Completed Backup of each source object.
# TYPE platform_operator_backup_duration_seconds gauge
platform_operator_backup_duration_seconds` + db + ` 3600
platform_operator_backup_duration_seconds` + net + ` 3600
# HELP platform_operator_backup_unverified 1 when the newest Completed Backup of a source has no finished restore drill, else 0.
# TYPE platform_operator_backup_unverified gauge
platform_operator_backup_unverified` + db + ` 1
platform_operator_backup_unverified` + net + ` 0
# HELP platform_operator_backup_verification_result 1 when the newest finished restore drill of a source's Backups Verified the artifact, 0 when it Failed; absent when none ever finished.
# TYPE platform_operator_backup_verification_result gauge
platform_operator_backup_verification_result` + db + ` 1
platform_operator_backup_verification_result` + net + ` 0
# HELP platform_operator_backup_recovery_seconds Recovery time measured by the newest finished restore drill of a source's Backups.
# TYPE platform_operator_backup_recovery_seconds gauge
platform_operator_backup_recovery_seconds` + db + ` 90
# HELP platform_operator_backup_schedule_interval_seconds A BackupSchedule's nominal interval: the longest gap between consecutive runs of its cron expression.
# TYPE platform_operator_backup_schedule_interval_seconds gauge
platform_operator_backup_schedule_interval_seconds{kind="PostgresDatabase",namespace="a",schedule="nightly",source="db"} 259200
# HELP platform_operator_backup_schedule_failing 1 when the newest finished Backup a BackupSchedule made Failed, else 0.
# TYPE platform_operator_backup_schedule_failing gauge
platform_operator_backup_schedule_failing{kind="PostgresDatabase",namespace="a",schedule="nightly",source="db"} 1
platform_operator_backup_schedule_failing{kind="ErgoNetwork",namespace="a",schedule="bad",source="net"} 0
# HELP platform_operator_backup_schedule_created_timestamp_seconds Creation time (Unix seconds) of a BackupSchedule: with no Completed Backup of its source, how long it has been due.
# TYPE platform_operator_backup_schedule_created_timestamp_seconds gauge
platform_operator_backup_schedule_created_timestamp_seconds{kind="PostgresDatabase",namespace="a",schedule="nightly",source="db"} ` + ts(100*time.Hour) + `
platform_operator_backup_schedule_created_timestamp_seconds{kind="ErgoNetwork",namespace="a",schedule="bad",source="net"} ` + ts(100*time.Hour) + `
`
	names := []string{"platform_operator_backup_last_success_timestamp_seconds", "platform_operator_backup_last_size_bytes",
		"platform_operator_backup_duration_seconds", "platform_operator_backup_unverified", "platform_operator_backup_verification_result",
		"platform_operator_backup_recovery_seconds", "platform_operator_backup_schedule_interval_seconds",
		"platform_operator_backup_schedule_failing", "platform_operator_backup_schedule_created_timestamp_seconds"}
	if err := testutil.CollectAndCompare(backupCollector(objs...), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// Every kind and phase is there, counted.
	c := backupCollector(objs...)
	for _, tt := range []struct {
		kind, phase string
		want        float64
	}{
		{"PostgresDatabase", "Completed", 2}, {"PostgresDatabase", "Failed", 1}, {"PostgresDatabase", "Running", 1},
		{"PostgresDatabase", "Pending", 0}, {"ErgoNetwork", "Completed", 1}, {"SojuBouncer", "Failed", 0},
	} {
		if got := gatherValue(t, c, "platform_operator_backups", map[string]string{"kind": tt.kind, "phase": tt.phase}); got != tt.want {
			t.Errorf("backups{kind=%s,phase=%s} = %v, want %v", tt.kind, tt.phase, got, tt.want)
		}
	}
}

// Control: with no Backups only the bounded counts are there, at zero; a schedule that has made no
// Backup is not failing.
func TestBackupCollectorEmpty(t *testing.T) {
	c := backupCollector(&backupv1.BackupSchedule{ObjectMeta: objectMeta("a", "s", time.Hour),
		Spec: backupv1.BackupScheduleSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceSojuBouncer, Name: "b"}, Store: "s", Schedule: "@daily"}})
	if n := testutil.CollectAndCount(c, "platform_operator_backups"); n != 12 {
		t.Errorf("%d backups series, want 3 kinds x 4 phases", n)
	}
	if n := testutil.CollectAndCount(c, "platform_operator_backup_last_success_timestamp_seconds"); n != 0 {
		t.Errorf("%d last-success series without Backups", n)
	}
	if got := gatherValue(t, c, "platform_operator_backup_schedule_failing", map[string]string{"schedule": "s"}); got != 0 {
		t.Errorf("failing = %v for a schedule without Backups", got)
	}
	if got := gatherValue(t, c, "platform_operator_backup_schedule_interval_seconds", map[string]string{"schedule": "s"}); got != 86400 {
		t.Errorf("interval = %v, want 86400", got)
	}
}

// Every metric of docs/metrics.md's Backups section is what the backup collector exports (with Backups
// and a schedule present), with the type the page says, and it exports no other.
func TestBackupMetricsDocumented(t *testing.T) {
	all := documentedMetrics(t)
	others := documentedMetrics(t, "Backups")
	documented := map[string]string{}
	for name, typ := range all {
		if _, ok := others[name]; !ok {
			documented[name] = typ
		}
	}
	if len(documented) < 9 {
		t.Fatalf("only %d metrics in docs/metrics.md's Backups section", len(documented))
	}
	reg := prometheus.NewPedanticRegistry()
	c := backupCollector(
		testBackup("b", "s", backupv1.BackupCompleted, 2*time.Hour, time.Hour, 1,
			&backupv1.BackupVerification{Result: backupv1.VerificationVerified, RecoveryTime: &metav1.Duration{Duration: time.Second}}),
		&backupv1.BackupSchedule{ObjectMeta: objectMeta("a", "s", time.Hour),
			Spec: backupv1.BackupScheduleSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "db"}, Store: "s", Schedule: "@daily"}})
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]string{}
	for _, f := range families {
		registered[f.GetName()] = strings.ToLower(f.GetType().String())
	}
	if !maps.Equal(documented, registered) {
		t.Errorf("docs/metrics.md's Backups section lists %v; the collector exports %v", sortedKeys(documented), sortedKeys(registered))
	}
}

func sortedKeys(m map[string]string) []string {
	out := slices.Collect(maps.Keys(m))
	slices.Sort(out)
	return out
}

// ts is the Unix time in seconds of now minus d, as the text format writes it.
func ts(d time.Duration) string {
	return strconvFloat(float64(clock.Add(-d).UnixMilli()) / 1000)
}

func strconvFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// gatherValue is the value of family name's one series from c whose labels include want.
func gatherValue(t *testing.T, c prometheus.Collector, name string, want map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series of %s with %v", name, want)
	return 0
}
