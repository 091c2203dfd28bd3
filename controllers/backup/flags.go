package backup

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// DefaultPostgresImage is --backup-postgres-image's default: Docker's official postgres image, whose tag
// is the server's major version, so that pg_dump is never older than the server.
const DefaultPostgresImage = "docker.io/library/postgres:%d"

// Flags are the backup group's command-line flags (docs/backup.md); BindFlags binds them and Options reads
// them once the command line is parsed.
type Flags struct {
	postgresImage  *string
	releaseTimeout *string
	jobDeadline    *string
}

// BindFlags defines the backup flags on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		postgresImage: fs.String("backup-postgres-image", DefaultPostgresImage,
			"Image of the pg_dump container of PostgresDatabase and SojuBouncer backups, with %d for the server's major version (docs/backup.md, The image)."),
		releaseTimeout: fs.String("backup-release-timeout", DefaultReleaseTimeout.String(),
			"How long a deleted Backup with artifactPolicy Delete waits for its store before it goes without deleting its artifact (docs/backup.md)."),
		jobDeadline: fs.String("backup-job-deadline", DefaultJobDeadline.String(),
			"How long a backup, datastore or drill Job may run (its activeDeadlineSeconds) before it, and its Backup or drill, fail (docs/backup.md)."),
	}
}

// Options are the group's options from the parsed flags, the operator's own image (RELATED_IMAGE_OPERATOR)
// and pod (POD_NAMESPACE, POD_NAME),
// with workers objects of each kind reconciled at once.
func (f *Flags) Options(workers int) (Options, error) {
	tmpl := *f.postgresImage
	if strings.Count(tmpl, "%d") != 1 || strings.Count(tmpl, "%") != 1 {
		return Options{}, fmt.Errorf("--backup-postgres-image %q must hold %%d once (the server's major version) and no other %%", tmpl)
	}
	timeout, err := parseDuration(*f.releaseTimeout)
	if err != nil {
		return Options{}, fmt.Errorf("--backup-release-timeout: %w", err)
	}
	deadline, err := parseDuration(*f.jobDeadline)
	if err != nil {
		return Options{}, fmt.Errorf("--backup-job-deadline: %w", err)
	}
	if deadline < time.Second {
		return Options{}, fmt.Errorf("--backup-job-deadline: %s is shorter than a second", deadline)
	}
	return Options{MaxConcurrentReconciles: workers, OperatorImage: os.Getenv("RELATED_IMAGE_OPERATOR"),
		PodNamespace: os.Getenv("POD_NAMESPACE"), PodName: os.Getenv("POD_NAME"),
		PostgresImage: tmpl, ReleaseTimeout: timeout, JobDeadline: deadline}, nil
}

// parseDuration is time.ParseDuration refusing zero and negative durations.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s is not a positive duration", s)
	}
	return d, nil
}
