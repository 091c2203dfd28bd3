package backup

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// TestRestoreFinished: a restore holds its backup until restoredFrom is set or it failed for good; a
// restore waiting or running holds it.
func TestRestoreFinished(t *testing.T) {
	restored := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: backupv1.ConditionRestored, Status: status, Reason: reason}}
	}
	tests := []struct {
		name  string
		from  *backupv1.RestoredFrom
		conds []metav1.Condition
		want  bool
	}{
		{"no status yet", nil, nil, false},
		{"restoredFrom set", &backupv1.RestoredFrom{Store: "s"}, nil, true},
		{"running", nil, restored(metav1.ConditionFalse, backupv1.ReasonRestoring), false},
		{"waiting for the Backup", nil, restored(metav1.ConditionFalse, backupv1.ReasonBackupNotCompleted), false},
		{"waiting for the Backup object", nil, restored(metav1.ConditionFalse, backupv1.ReasonBackupNotFound), false},
		{"waiting for the store", nil, restored(metav1.ConditionFalse, backupv1.ReasonStoreNotReady), false},
		{"failed", nil, restored(metav1.ConditionFalse, backupv1.ReasonRestoreFailed), true},
		{"target not empty", nil, restored(metav1.ConditionFalse, backupv1.ReasonTargetNotEmpty), true},
		{"wrong kind", nil, restored(metav1.ConditionFalse, backupv1.ReasonWrongKind), true},
		{"schema too new", nil, restored(metav1.ConditionFalse, backupv1.ReasonSchemaTooNew), true},
		{"a final reason with status Unknown is not final", nil, restored(metav1.ConditionUnknown, backupv1.ReasonRestoreFailed), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := restoreFinished(tt.from, tt.conds); got != tt.want {
				t.Errorf("restoreFinished = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBackupsInUse: which Backups a restore or a drill reads, with why, in both forms of a restore
// source, and the near misses that read nothing.
func TestBackupsInUse(t *testing.T) {
	backup := func(name string, kind backupv1.SourceKind, source, store, id string) backupv1.Backup {
		return backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: kind, Name: source}, Store: store},
			Status: backupv1.BackupStatus{Phase: backupv1.BackupCompleted, ID: id}}
	}
	drilled := backup("drilled", backupv1.SourcePostgresDatabase, "db", "s", "id-d")
	drilled.Status.Verification = &backupv1.BackupVerification{Result: backupv1.VerificationRunning}
	noID := backup("no-id", backupv1.SourcePostgresDatabase, "db", "s", "")
	backups := []backupv1.Backup{
		backup("by-name", backupv1.SourcePostgresDatabase, "db", "s", "id-1"),
		backup("by-store", backupv1.SourcePostgresDatabase, "db", "s", "id-2"),
		backup("other-kind", backupv1.SourceErgoNetwork, "db", "s", "id-3"),
		backup("free", backupv1.SourcePostgresDatabase, "db", "s", "id-4"),
		drilled, noID,
	}
	restores := []Restore{
		{backupv1.SourcePostgresDatabase, "a", backupv1.RestoreSource{Backup: "by-name"}},
		{backupv1.SourcePostgresDatabase, "b", backupv1.RestoreSource{Store: "s", SourceName: "db", ID: "id-2"}},
		// Near misses: the id of an ErgoNetwork Backup from a PostgresDatabase; another store; another
		// source; an empty id never matches a Backup without one.
		{backupv1.SourcePostgresDatabase, "c", backupv1.RestoreSource{Store: "s", SourceName: "db", ID: "id-3"}},
		{backupv1.SourcePostgresDatabase, "d", backupv1.RestoreSource{Store: "t", SourceName: "db", ID: "id-4"}},
		{backupv1.SourcePostgresDatabase, "e", backupv1.RestoreSource{Store: "s", SourceName: "other", ID: "id-4"}},
		{backupv1.SourcePostgresDatabase, "f", backupv1.RestoreSource{Store: "s", SourceName: "db"}},
		// Two readers of one Backup are both named.
		{backupv1.SourceSojuBouncer, "g", backupv1.RestoreSource{Backup: "by-name"}},
	}
	got := BackupsInUse(backups, restores)
	want := map[string]string{
		"by-name":  `PostgresDatabase "a" is restoring from it; SojuBouncer "g" is restoring from it`,
		"by-store": `PostgresDatabase "b" is restoring from it`,
		"drilled":  "its restore drill is running",
	}
	if len(got) != len(want) {
		t.Errorf("in use %v, want %v", got, want)
	}
	for name, why := range want {
		if got[name] != why {
			t.Errorf("%s: %q, want %q", name, got[name], why)
		}
	}
	if BackupsInUse(backups, nil)["by-name"] != "" {
		t.Error("control: without restores, by-name is in use")
	}
}

func TestKeptMessage(t *testing.T) {
	if got := keptMessage(map[string]string{"b": "y", "a": "x"}); got != "a (x), b (y)" {
		t.Errorf("keptMessage = %q", got)
	}
	if got := keptMessage(nil); got != "" {
		t.Errorf("keptMessage(nil) = %q", got)
	}
}

// TestServedRestoringKinds: a kind whose API is not served (an install without the irc CRDs) is neither
// watched nor listed; the control serves all three.
func TestServedRestoringKinds(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{homelabv1.AddToScheme, ircv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	mapper := func(gvs ...schema.GroupVersion) meta.RESTMapper {
		m := meta.NewDefaultRESTMapper(gvs)
		for _, gv := range gvs {
			for kind := range scheme.KnownTypes(gv) {
				m.Add(gv.WithKind(kind), meta.RESTScopeNamespace)
			}
		}
		return m
	}
	got, err := servedRestoringKinds(scheme, mapper(homelabv1.GroupVersion))
	if err != nil {
		t.Fatal(err)
	}
	if want := []backupv1.SourceKind{backupv1.SourcePostgresDatabase}; !slices.Equal(got, want) {
		t.Errorf("homelab only: %v, want %v", got, want)
	}
	got, err = servedRestoringKinds(scheme, mapper(homelabv1.GroupVersion, ircv1.GroupVersion))
	if err != nil {
		t.Fatal(err)
	}
	if want := []backupv1.SourceKind{backupv1.SourcePostgresDatabase, backupv1.SourceSojuBouncer, backupv1.SourceErgoNetwork}; !slices.Equal(got, want) {
		t.Errorf("both groups: %v, want %v", got, want)
	}
}
