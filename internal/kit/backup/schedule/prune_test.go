package schedule

import (
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

var (
	now       = ts("2026-01-31T12:00:00Z")
	completed = backupv1.BackupCompleted
	failed    = backupv1.BackupFailed
	running   = backupv1.BackupRunning
	pending   = backupv1.BackupPending
)

// daysAgo is a Backup named <phase initial><days> made that many days before now.
func daysAgo(days int, phase backupv1.BackupPhase) Item {
	return Item{Name: string(phase)[:1] + strconv.Itoa(days), Created: now.Add(-time.Duration(days) * 24 * time.Hour), Phase: phase}
}

func names(items ...Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Name)
	}
	return out
}

func TestPrune(t *testing.T) {
	day := 24 * time.Hour
	c1, c2, c3, c4, c5 := daysAgo(1, completed), daysAgo(2, completed), daysAgo(3, completed), daysAgo(4, completed), daysAgo(5, completed)
	f1, f2, f3 := daysAgo(1, failed), daysAgo(2, failed), daysAgo(3, failed)
	tests := []struct {
		name   string
		items  []Item
		r      Retention
		inUse  []string
		delete []Item
	}{
		{"no retention prunes nothing", []Item{c1, c2, c3, c4, c5}, Retention{}, nil, nil},
		{"keepLast 3 of 5", []Item{c3, c1, c5, c2, c4}, Retention{KeepLast: 3}, nil, []Item{c5, c4}},
		{"keepLast equal to the count", []Item{c1, c2, c3}, Retention{KeepLast: 3}, nil, nil},
		{"keepLast 1 keeps the newest only", []Item{c1, c2, c3}, Retention{KeepLast: 1}, nil, []Item{c3, c2}},
		{"maxAge below the boundary keeps", []Item{c1, c2, c3}, Retention{MaxAge: 3*day + time.Second}, nil, nil},
		{"maxAge at the boundary prunes", []Item{c1, c2, c3}, Retention{MaxAge: 3 * day}, nil, []Item{c3}},
		{"either rule: count", []Item{c1, c2, c3}, Retention{KeepLast: 2, MaxAge: 10 * day}, nil, []Item{c3}},
		{"either rule: age", []Item{c1, c2, c3}, Retention{KeepLast: 10, MaxAge: 2 * day}, nil, []Item{c3, c2}},
		{"never the newest Completed, even too old", []Item{c4, c5}, Retention{MaxAge: day}, nil, []Item{c5}},
		{"never the newest Completed, newer failures ignored", []Item{f1, f2, c5}, Retention{MaxAge: 4 * day}, nil, nil},
		{"in use is kept", []Item{c1, c2, c3, c4}, Retention{KeepLast: 1}, []string{c3.Name}, []Item{c4, c2}},
		{"in use and too old is kept", []Item{c1, c5}, Retention{MaxAge: day}, []string{c5.Name}, nil},
		{"running and pending never pruned", []Item{c1, daysAgo(9, running), daysAgo(8, pending), {Name: "nophase", Created: now.Add(-30 * day)}},
			Retention{KeepLast: 1, MaxAge: day}, nil, nil},
		{"failed do not count toward keepLast", []Item{f1, f2, c3, c4}, Retention{KeepLast: 2}, nil, nil},
		{"failed pruned by their own count", []Item{f1, f2, f3, c4, c5}, Retention{KeepLast: 2}, nil, []Item{f3}},
		{"failed and completed pruned by count", []Item{f1, f2, f3, c3, c4, c5}, Retention{KeepLast: 2}, nil, []Item{c5, f3}},
		{"failed pruned by age, the newest failed too", []Item{f1, f3, c1}, Retention{MaxAge: day}, nil, []Item{f3, f1}},
		{"only failures: all may go", []Item{f1, f2}, Retention{KeepLast: 1}, nil, []Item{f2}},
		{"empty", nil, Retention{KeepLast: 1}, nil, nil},
		{"ties broken by name", []Item{{Name: "s-20260131000000", Created: now, Phase: completed}, {Name: "s-20260131000001", Created: now, Phase: completed}},
			Retention{KeepLast: 1}, nil, string2Items("s-20260131000000")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inUse := map[string]bool{}
			for _, n := range tt.inUse {
				inUse[n] = true
			}
			got := Prune(tt.items, tt.r, now, inUse)
			if want := names(tt.delete...); !slices.Equal(got, want) {
				t.Fatalf("Prune = %v, want %v", got, want)
			}
			// Whatever the rules: the newest Completed and the in-use ones survive.
			var newest *Item
			for i, it := range tt.items {
				if it.Phase == completed && (newest == nil || it.Created.After(newest.Created) ||
					(it.Created.Equal(newest.Created) && it.Name > newest.Name)) {
					newest = &tt.items[i]
				}
			}
			for _, n := range got {
				if newest != nil && n == newest.Name {
					t.Errorf("pruned the newest Completed %s", n)
				}
				if inUse[n] {
					t.Errorf("pruned %s, which is in use", n)
				}
			}
		})
	}
}

func string2Items(n ...string) []Item {
	var out []Item
	for _, s := range n {
		out = append(out, Item{Name: s})
	}
	return out
}

func TestRetentionOf(t *testing.T) {
	if got := RetentionOf(nil); got != (Retention{}) {
		t.Fatalf("RetentionOf(nil) = %+v", got)
	}
	got := RetentionOf(&backupv1.BackupRetention{KeepLast: ptr.To[int32](7), MaxAge: &metav1.Duration{Duration: time.Hour}})
	if got != (Retention{KeepLast: 7, MaxAge: time.Hour}) {
		t.Fatalf("RetentionOf = %+v", got)
	}
}
