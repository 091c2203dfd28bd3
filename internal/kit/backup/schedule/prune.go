package schedule

import (
	"cmp"
	"slices"
	"time"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

// Item is what retention reads of one Backup a schedule made.
type Item struct {
	// Name is the Backup's name.
	Name string
	// Created is when the Backup's data was taken (status.startTime, or its creationTimestamp when it
	// never started): a backup's age is counted from it.
	Created time.Time
	// Phase is the Backup's status.phase.
	Phase backupv1.BackupPhase
}

// Retention is a schedule's retention: KeepLast 0 and MaxAge 0 mean the rule is not set.
type Retention struct {
	KeepLast int
	MaxAge   time.Duration
}

// RetentionOf reads the API's retention (nil: nothing is pruned).
func RetentionOf(r *backupv1.BackupRetention) Retention {
	var out Retention
	if r == nil {
		return out
	}
	if r.KeepLast != nil {
		out.KeepLast = int(*r.KeepLast)
	}
	if r.MaxAge != nil {
		out.MaxAge = r.MaxAge.Duration
	}
	return out
}

// Prune returns the names of the Backups retention deletes, oldest first. A Backup goes when either rule
// says so: it is beyond the newest KeepLast of its kind, or its age (now minus Created) is MaxAge or
// more. Never pruned:
//   - the newest Completed Backup, whatever the rules say (a schedule always keeps something to restore);
//   - a Backup named in inUse (a restore or a drill is reading its artifact);
//   - a Pending or Running Backup (or one with no phase yet): its Job is still writing.
//
// Completed and Failed Backups are counted apart: a Failed one holds no artifact worth keeping, so it
// never takes one of the KeepLast places of a Completed one, but the newest KeepLast Failed ones are kept
// (with MaxAge) so a run of failures stays visible to whoever diagnoses it.
func Prune(items []Item, r Retention, now time.Time, inUse map[string]bool) []string {
	if r.KeepLast <= 0 && r.MaxAge <= 0 {
		return nil
	}
	byPhase := map[backupv1.BackupPhase][]Item{}
	for _, it := range items {
		if it.Phase == backupv1.BackupCompleted || it.Phase == backupv1.BackupFailed {
			byPhase[it.Phase] = append(byPhase[it.Phase], it)
		}
	}
	var out []Item
	for phase, list := range byPhase {
		// Newest first; the name (which ends in the schedule time) breaks ties of one second.
		slices.SortFunc(list, func(a, b Item) int {
			if c := b.Created.Compare(a.Created); c != 0 {
				return c
			}
			return cmp.Compare(b.Name, a.Name)
		})
		for i, it := range list {
			if phase == backupv1.BackupCompleted && i == 0 {
				continue
			}
			if inUse[it.Name] {
				continue
			}
			tooMany := r.KeepLast > 0 && i >= r.KeepLast
			tooOld := r.MaxAge > 0 && now.Sub(it.Created) >= r.MaxAge
			if tooMany || tooOld {
				out = append(out, it)
			}
		}
	}
	slices.SortFunc(out, func(a, b Item) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	names := make([]string, 0, len(out))
	for _, it := range out {
		names = append(names, it.Name)
	}
	return names
}
