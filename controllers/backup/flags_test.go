package backup

import (
	"flag"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		image   string
		timeout time.Duration
		// deadline is the Jobs' deadline wanted; DefaultJobDeadline when zero.
		deadline time.Duration
		wantErr  bool
	}{
		{name: "defaults", image: DefaultPostgresImage, timeout: DefaultReleaseTimeout},
		{name: "a mirror", args: []string{"--backup-postgres-image=registry.example/postgres:%d-bookworm", "--backup-release-timeout=2h"},
			image: "registry.example/postgres:%d-bookworm", timeout: 2 * time.Hour},
		{name: "no %d", args: []string{"--backup-postgres-image=postgres:16"}, wantErr: true},
		{name: "two verbs", args: []string{"--backup-postgres-image=postgres:%d-%s"}, wantErr: true},
		{name: "zero timeout", args: []string{"--backup-release-timeout=0s"}, wantErr: true},
		{name: "a longer Job deadline", args: []string{"--backup-job-deadline=72h"}, image: DefaultPostgresImage,
			timeout: DefaultReleaseTimeout, deadline: 72 * time.Hour},
		{name: "zero Job deadline", args: []string{"--backup-job-deadline=0s"}, wantErr: true},
		{name: "a Job deadline under a second", args: []string{"--backup-job-deadline=500ms"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("RELATED_IMAGE_OPERATOR", "registry.test/op:v1")
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			f := BindFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			opts, err := f.Options(3)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.deadline == 0 {
				tt.deadline = DefaultJobDeadline
			}
			if err == nil && (opts.PostgresImage != tt.image || opts.ReleaseTimeout != tt.timeout || opts.JobDeadline != tt.deadline ||
				opts.OperatorImage != "registry.test/op:v1" || opts.MaxConcurrentReconciles != 3) {
				t.Errorf("options %+v", opts)
			}
		})
	}
}

func TestUnreachableBackoff(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	down := func(since time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: backupv1.ReasonStoreUnreachable,
			LastTransitionTime: metav1.NewTime(now.Add(-since))}}
	}
	tests := []struct {
		name   string
		before []metav1.Condition
		want   time.Duration
	}{
		{"first failure", nil, storeMinBackoff},
		{"was reachable", []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: backupv1.ReasonReachable}}, storeMinBackoff},
		{"down a moment", down(4 * time.Second), storeMinBackoff},
		{"down 2 minutes", down(2 * time.Minute), time.Minute},
		{"down a day", down(24 * time.Hour), storeMaxBackoff},
	}
	for _, tt := range tests {
		if got := unreachableBackoff(tt.before, now); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
