package backup

import (
	"context"
	"fmt"
	"io"
	"time"
)

// restoreCommand restores an artifact into a new, empty database: `platform-operator backup restore ...`.
const restoreCommand = "restore"

// ResultRestored is the result of a restore that succeeded (a failed one is ResultFailed).
const ResultRestored = "Restored"

// The reasons of a restore's result besides those it shares with a drill (ChecksumMismatch,
// RestoreFailed, Incomplete, the store's, Interrupted, Usage).
const (
	// ReasonRestored: the checksum matched and pg_restore exited 0.
	ReasonRestored = "Restored"
	// ReasonTargetNotEmpty: the target database holds tables; a restore never writes into a database
	// with content. Nothing was written.
	ReasonTargetNotEmpty = "TargetNotEmpty"
	// ReasonTargetUnavailable: the target database cannot be reached. Nothing was written.
	ReasonTargetUnavailable = "TargetUnavailable"
	// ReasonWrongFormat: the artifact is not a pg_dump (an ergo datastore). Nothing was written.
	ReasonWrongFormat = "WrongFormat"
)

// restoreMain runs `platform-operator backup restore` with args (those after "restore").
func restoreMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return resultMain(ctx, resultCommand{
		name:    restoreCommand,
		urlFlag: "target-url-env",
		urlHelp: "the environment variable holding the empty target database's postgresql:// URL",
		ok:      ResultRestored,
		run:     restore,
	}, args, stdout, stderr)
}

// restore restores ref (a pg_dump-custom artifact of ref.Kind: the manifest must name the same ref) into
// the empty database at target. A failure after pg_restore started (a checksum that does not match at the
// end of the stream, pg_restore's own error) may leave part of the data in the target: the caller must
// treat that database as unusable, never as restored.
func restore(ctx context.Context, storeConfig string, ref Ref, target string) VerifyResult {
	var recovery time.Duration
	err := func() error {
		if target == "" {
			return failed(ReasonUsage, "--target-url-env is required")
		}
		repo, err := open(storeConfig, ref.Namespace)
		if err != nil {
			return storeFailure(err)
		}
		m, err := repo.Manifest(ctx, ref)
		if err != nil {
			return storeFailure(err)
		}
		if m.Format != FormatPgDumpCustom {
			return failed(ReasonWrongFormat, "%s is a %s artifact: only %s restores into a database", ref, m.Format, FormatPgDumpCustom)
		}
		conn, err := connectEmpty(ctx, target, emptyTarget{what: "target database", notEmpty: ReasonTargetNotEmpty,
			unavailable: ReasonTargetUnavailable, verb: "a restore writes only into an empty database"})
		if err != nil {
			return err
		}
		// Closed before pg_restore starts: the check is done, and a connection held open would count
		// against the role's connection limit.
		_ = conn.Close(ctx)
		recovery, _, err = pgRestore(ctx, repo, m, target, false)
		return err
	}()
	return resultOf(ctx, err, VerifyResult{Result: ResultRestored, Reason: ReasonRestored, RecoverySeconds: recovery.Seconds(),
		Message: fmt.Sprintf("%s restored in %.3fs", ref, recovery.Seconds())}, dbURL(target))
}
