package lastbackup

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

const (
	pg   = backupv1.SourcePostgresDatabase
	soju = backupv1.SourceSojuBouncer
)

var t0 = time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)

// bk is a Backup named name of kind/source in phase, committed at minute min after t0 (none when min < 0).
func bk(name string, kind backupv1.SourceKind, source string, phase backupv1.BackupPhase, minute int) backupv1.Backup {
	b := backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec:   backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: kind, Name: source}, Store: "s3"},
		Status: backupv1.BackupStatus{Phase: phase}}
	if minute >= 0 {
		at := metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))
		b.Status.CompletionTime = &at
	}
	return b
}

func TestNewest(t *testing.T) {
	done := backupv1.BackupCompleted
	tests := []struct {
		name    string
		backups []backupv1.Backup
		want    string // "" for none
		wantMin int
	}{
		{"none", nil, "", 0},
		{"one completed", []backupv1.Backup{bk("a", pg, "db", done, 1)}, "a", 1},
		{"the newest completion wins, not the list order", []backupv1.Backup{bk("b", pg, "db", done, 5), bk("a", pg, "db", done, 9), bk("c", pg, "db", done, 2)}, "a", 9},
		{"a newer failed, running or pending backup does not count", []backupv1.Backup{bk("old", pg, "db", done, 1),
			bk("f", pg, "db", backupv1.BackupFailed, 7), bk("r", pg, "db", backupv1.BackupRunning, -1), bk("p", pg, "db", backupv1.BackupPending, -1),
			bk("empty", pg, "db", "", -1)}, "old", 1},
		{"only failed", []backupv1.Backup{bk("f", pg, "db", backupv1.BackupFailed, 7)}, "", 0},
		{"another kind of the same name is not this object's", []backupv1.Backup{bk("mine", pg, "db", done, 1), bk("theirs", soju, "db", done, 8)}, "mine", 1},
		{"another name of the same kind is not this object's", []backupv1.Backup{bk("mine", pg, "db", done, 1), bk("theirs", pg, "db2", done, 8)}, "mine", 1},
		{"a tie goes to the greater name", []backupv1.Backup{bk("a", pg, "db", done, 3), bk("b", pg, "db", done, 3)}, "b", 3},
		{"a completed backup without completionTime counts from its creation", []backupv1.Backup{bk("legacy", pg, "db", done, -1)}, "legacy", -60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Newest(tt.backups, pg, "db")
			if tt.want == "" {
				if got != nil {
					t.Fatalf("got %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("got none, want %s", tt.want)
			}
			if wantAt := t0.Add(time.Duration(tt.wantMin) * time.Minute); got.Name != tt.want || !got.Time.Time.Equal(wantAt) {
				t.Errorf("got %s at %s, want %s at %s", got.Name, got.Time, tt.want, wantAt)
			}
		})
	}
}

func TestRelevant(t *testing.T) {
	p := Relevant(pg)
	done, running, failed := backupv1.BackupCompleted, backupv1.BackupRunning, backupv1.BackupFailed
	ptr := func(b backupv1.Backup) *backupv1.Backup { return &b }
	updates := []struct {
		name     string
		old, new backupv1.Backup
		want     bool
	}{
		{"running to completed", bk("a", pg, "db", running, -1), bk("a", pg, "db", done, 1), true},
		{"pending to running", bk("a", pg, "db", "", -1), bk("a", pg, "db", running, -1), false},
		{"running to failed", bk("a", pg, "db", running, -1), bk("a", pg, "db", failed, 1), false},
		{"a completed one's drill (same completion)", bk("a", pg, "db", done, 1), bk("a", pg, "db", done, 1), false},
		{"a completed one's completion time changed", bk("a", pg, "db", done, 1), bk("a", pg, "db", done, 2), true},
		{"completed no more", bk("a", pg, "db", done, 1), bk("a", pg, "db", failed, 1), true},
		{"another kind completed", bk("a", soju, "db", running, -1), bk("a", soju, "db", done, 1), false},
	}
	for _, tt := range updates {
		t.Run("update: "+tt.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: ptr(tt.old), ObjectNew: ptr(tt.new)}); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name string
		b    backupv1.Backup
		want bool
	}{
		{"completed", bk("a", pg, "db", done, 1), true},
		{"running", bk("a", pg, "db", running, -1), false},
		{"another kind's completed", bk("a", soju, "db", done, 1), false},
	} {
		t.Run("create and delete: "+tt.name, func(t *testing.T) {
			if got := p.Create(event.CreateEvent{Object: ptr(tt.b)}); got != tt.want {
				t.Errorf("create: got %v, want %v", got, tt.want)
			}
			if got := p.Delete(event.DeleteEvent{Object: ptr(tt.b)}); got != tt.want {
				t.Errorf("delete: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSourceAndIndex(t *testing.T) {
	b := bk("a", soju, "bouncer", backupv1.BackupCompleted, 1)
	reqs := source(t.Context(), &b)
	if len(reqs) != 1 || reqs[0].Namespace != "ns" || reqs[0].Name != "bouncer" {
		t.Errorf("source: got %v, want ns/bouncer", reqs)
	}
	if IndexField(pg) == IndexField(soju) {
		t.Errorf("the kinds share index %q: two controllers in one manager would register it twice", IndexField(pg))
	}
}
