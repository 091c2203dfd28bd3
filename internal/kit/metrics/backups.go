package metrics

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/schedule"
)

// The backup gauges (docs/metrics.md, Backups). The per-source ones carry the source's namespace, kind
// and name: a set bounded by the objects that have Backups, like the fleet's per-Deployment gauges, and
// gone with their last Backup.
var (
	backupLastSuccessDesc = prometheus.NewDesc(Namespace+"_backup_last_success_timestamp_seconds",
		"Completion time (Unix seconds) of the newest Completed Backup of each source object.",
		[]string{"namespace", "kind", "source"}, nil)
	backupLastSizeDesc = prometheus.NewDesc(Namespace+"_backup_last_size_bytes",
		"Artifact size of the newest Completed Backup of each source object.",
		[]string{"namespace", "kind", "source"}, nil)
	backupDurationDesc = prometheus.NewDesc(Namespace+"_backup_duration_seconds",
		"Start to completion of the newest Completed Backup of each source object.",
		[]string{"namespace", "kind", "source"}, nil)
	backupsDesc = prometheus.NewDesc(Namespace+"_backups",
		"Backups by source kind and status.phase (none yet: Pending).",
		[]string{"kind", "phase"}, nil)
	backupVerificationDesc = prometheus.NewDesc(Namespace+"_backup_verification_result",
		"1 when the newest finished restore drill of a source's Backups Verified the artifact, 0 when it Failed; absent when none ever finished.",
		[]string{"namespace", "kind", "source"}, nil)
	backupUnverifiedDesc = prometheus.NewDesc(Namespace+"_backup_unverified",
		"1 when the newest Completed Backup of a source has no finished restore drill, else 0.",
		[]string{"namespace", "kind", "source"}, nil)
	backupRecoveryDesc = prometheus.NewDesc(Namespace+"_backup_recovery_seconds",
		"Recovery time measured by the newest finished restore drill of a source's Backups.",
		[]string{"namespace", "kind", "source"}, nil)
	scheduleIntervalDesc = prometheus.NewDesc(Namespace+"_backup_schedule_interval_seconds",
		"A BackupSchedule's nominal interval: the longest gap between consecutive runs of its cron expression.",
		[]string{"namespace", "schedule", "kind", "source"}, nil)
	scheduleFailingDesc = prometheus.NewDesc(Namespace+"_backup_schedule_failing",
		"1 when the newest finished Backup a BackupSchedule made Failed, else 0.",
		[]string{"namespace", "schedule", "kind", "source"}, nil)
	scheduleCreatedDesc = prometheus.NewDesc(Namespace+"_backup_schedule_created_timestamp_seconds",
		"Creation time (Unix seconds) of a BackupSchedule: with no Completed Backup of its source, how long it has been due.",
		[]string{"namespace", "schedule", "kind", "source"}, nil)
)

var (
	sourceKinds  = []string{string(backupv1.SourcePostgresDatabase), string(backupv1.SourceSojuBouncer), string(backupv1.SourceErgoNetwork)}
	backupPhases = []string{string(backupv1.BackupPending), string(backupv1.BackupRunning), string(backupv1.BackupCompleted),
		string(backupv1.BackupFailed)}
)

// BackupCollector computes the backup gauges from the Backups and BackupSchedules in its reader (the
// manager's cache) at each scrape, once elected is closed, like Collector.
type BackupCollector struct {
	reader  Reader
	elected <-chan struct{}
	now     func() time.Time
}

// NewBackupCollector is the backup gauges' collector, reading from reader once elected is closed (nil:
// at once).
func NewBackupCollector(reader Reader, elected <-chan struct{}) *BackupCollector {
	return &BackupCollector{reader: reader, elected: elected, now: time.Now}
}

// RegisterBackups registers the backup gauges with reg. Call it where the backup controllers run: the
// collector lists Backups and BackupSchedules from reader, which for a cache starts their informers.
func RegisterBackups(reg prometheus.Registerer, reader Reader, elected <-chan struct{}) error {
	return reg.Register(NewBackupCollector(reader, elected))
}

// Describe sends every gauge's description.
func (c *BackupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{backupLastSuccessDesc, backupLastSizeDesc, backupDurationDesc, backupsDesc,
		backupVerificationDesc, backupUnverifiedDesc, backupRecoveryDesc, scheduleIntervalDesc, scheduleFailingDesc, scheduleCreatedDesc} {
		ch <- d
	}
}

// sourceKey is one source object.
type sourceKey struct{ namespace, kind, name string }

// sourceBackups is what one source's Backups show: its newest Completed Backup and its newest finished
// drill.
type sourceBackups struct {
	completed   *backupv1.Backup
	completedAt time.Time
	drill       *backupv1.Backup
	drillAt     time.Time
}

// finishedTime is a finished Backup's end (completionTime, else its creation); false while unfinished.
func finishedTime(b *backupv1.Backup) (time.Time, bool) {
	if b.Status.Phase != backupv1.BackupCompleted && b.Status.Phase != backupv1.BackupFailed {
		return time.Time{}, false
	}
	if b.Status.CompletionTime != nil {
		return b.Status.CompletionTime.Time, true
	}
	return b.CreationTimestamp.Time, true
}

// drillTime is when a Backup's drill finished (false when none finished).
func drillTime(b *backupv1.Backup) (time.Time, bool) {
	v := b.Status.Verification
	if v == nil || (v.Result != backupv1.VerificationVerified && v.Result != backupv1.VerificationFailed) {
		return time.Time{}, false
	}
	if v.CompletionTime != nil {
		return v.CompletionTime.Time, true
	}
	return finishedTime(b)
}

// Collect lists the Backups and BackupSchedules and sends the gauges. A list that fails leaves this
// scrape without the gauges it feeds (logged).
func (c *BackupCollector) Collect(ch chan<- prometheus.Metric) {
	if c.elected != nil {
		select {
		case <-c.elected:
		default:
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	log := ctrl.Log.WithName("metrics")
	var backups backupv1.BackupList
	if err := c.reader.List(ctx, &backups, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "list for metrics", "kind", "Backup")
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}

	phases := map[[2]string]int{}
	sources := map[sourceKey]*sourceBackups{}
	// newestFinished is, per schedule (namespace and name), its newest finished Backup.
	newestFinished := map[[2]string]*backupv1.Backup{}
	for i := range backups.Items {
		b := &backups.Items[i]
		kind := string(b.Spec.Source.Kind)
		if !slices.Contains(sourceKinds, kind) {
			continue
		}
		phase := string(b.Status.Phase)
		if phase == "" {
			phase = string(backupv1.BackupPending)
		}
		if !slices.Contains(backupPhases, phase) {
			continue
		}
		phases[[2]string{kind, phase}]++
		key := sourceKey{b.Namespace, kind, b.Spec.Source.Name}
		s := sources[key]
		if s == nil {
			s = &sourceBackups{}
			sources[key] = s
		}
		if at, ok := finishedTime(b); ok && b.Status.Phase == backupv1.BackupCompleted &&
			(s.completed == nil || lastbackup.Later(at, b.Name, s.completedAt, s.completed.Name)) {
			s.completed, s.completedAt = b, at
		}
		if at, ok := drillTime(b); ok && (s.drill == nil || lastbackup.Later(at, b.Name, s.drillAt, s.drill.Name)) {
			s.drill, s.drillAt = b, at
		}
		if name := b.Labels[backupv1.LabelSchedule]; name != "" {
			if at, ok := finishedTime(b); ok {
				k := [2]string{b.Namespace, name}
				if cur := newestFinished[k]; cur == nil {
					newestFinished[k] = b
				} else if curAt, _ := finishedTime(cur); lastbackup.Later(at, b.Name, curAt, cur.Name) {
					newestFinished[k] = b
				}
			}
		}
	}
	for _, k := range sourceKinds {
		for _, p := range backupPhases {
			gauge(backupsDesc, float64(phases[[2]string{k, p}]), k, p)
		}
	}
	for key, s := range sources {
		labels := []string{key.namespace, key.kind, key.name}
		if b := s.completed; b != nil {
			gauge(backupLastSuccessDesc, float64(s.completedAt.UnixMilli())/1000, labels...)
			gauge(backupLastSizeDesc, float64(b.Status.Size), labels...)
			if b.Status.StartTime != nil {
				gauge(backupDurationDesc, max(s.completedAt.Sub(b.Status.StartTime.Time), 0).Seconds(), labels...)
			}
			_, drilled := drillTime(b)
			gauge(backupUnverifiedDesc, boolValue(!drilled), labels...)
		}
		if b := s.drill; b != nil {
			gauge(backupVerificationDesc, boolValue(b.Status.Verification.Result == backupv1.VerificationVerified), labels...)
			if rt := b.Status.Verification.RecoveryTime; rt != nil {
				gauge(backupRecoveryDesc, rt.Seconds(), labels...)
			}
		}
	}

	var schedules backupv1.BackupScheduleList
	if err := c.reader.List(ctx, &schedules, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "list for metrics", "kind", "BackupSchedule")
		return
	}
	now := c.now()
	for i := range schedules.Items {
		s := &schedules.Items[i]
		kind := string(s.Spec.Source.Kind)
		if !slices.Contains(sourceKinds, kind) {
			continue
		}
		labels := []string{s.Namespace, s.Name, kind, s.Spec.Source.Name}
		if parsed, err := schedule.Parse(s.Spec.Schedule); err == nil {
			gauge(scheduleIntervalDesc, parsed.Interval(now).Seconds(), labels...)
		}
		last := newestFinished[[2]string{s.Namespace, s.Name}]
		gauge(scheduleFailingDesc, boolValue(last != nil && last.Status.Phase == backupv1.BackupFailed), labels...)
		gauge(scheduleCreatedDesc, float64(s.CreationTimestamp.UnixMilli())/1000, labels...)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
