package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// restoreCommand restores an artifact into a new, empty database: `platform-operator backup restore ...`.
const restoreCommand = "restore"

// ResultRestored is the result of a restore that succeeded (a failed one is ResultFailed).
const ResultRestored = "Restored"

// The reasons of a restore's result besides those it shares with a drill (ChecksumMismatch,
// RestoreFailed, Incomplete, the store's, Interrupted, Usage).
const (
	// ReasonRestored: the checksum matched and pg_restore exited 0; or, for a datastore, the checksum
	// matched, the datastore's library opened the copy (and its content matched the facts, when the
	// manifest has them) and it was moved into place.
	ReasonRestored = "Restored"
	// ReasonTargetNotEmpty: the target database holds tables, or the target file exists; a restore never
	// writes into a database with content, nor over a datastore. Nothing was written.
	ReasonTargetNotEmpty = "TargetNotEmpty"
	// ReasonTargetUnavailable: the target database cannot be reached, or the target file's directory
	// cannot be written. Nothing was written.
	ReasonTargetUnavailable = "TargetUnavailable"
	// ReasonWrongFormat: the artifact is not of the target's format (an ergo datastore for a database, a
	// pg_dump for a file). Nothing was written.
	ReasonWrongFormat = "WrongFormat"
)

// restoreMain runs `platform-operator backup restore` with args (those after "restore").
func restoreMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return resultMain(ctx, resultCommand{
		name:     restoreCommand,
		urlFlag:  "target-url-env",
		urlHelp:  "the environment variable holding the empty target database's postgresql:// URL (pg_dump-custom)",
		fileFlag: "target-file",
		fileHelp: "the datastore file to create (buntdb): it must not exist; its directory must",
		ok:       ResultRestored,
		run: func(ctx context.Context, storeConfig string, ref Ref, target, file string) VerifyResult {
			if file != "" {
				return restoreFile(ctx, storeConfig, ref, file)
			}
			return restore(ctx, storeConfig, ref, target)
		},
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
			return failed(ReasonUsage, "--target-url-env (a database) or --target-file (a datastore) is required")
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
			return failed(ReasonWrongFormat, "%s is a %s artifact: only %s restores into a database (a datastore restores into a file, --target-file)", ref, m.Format, FormatPgDumpCustom)
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

// restoreFile restores ref (a datastore artifact: the manifest must name the same ref) into a new file at
// path, never over one: it refuses an existing path (TargetNotEmpty), downloads the data to a temporary
// file in path's directory, which it keeps only when the checksum matched at the end of the stream and
// the datastore's library opened it (and its content matched the facts, when the manifest has them),
// then moves it to path without replacing anything there. A failure leaves nothing at path, and no
// temporary file behind.
func restoreFile(ctx context.Context, storeConfig string, ref Ref, path string) VerifyResult {
	var recovery time.Duration
	checked := "opened with its library"
	err := func() error {
		if !filepath.IsAbs(path) {
			return failed(ReasonUsage, "--target-file %q is not an absolute path", path)
		}
		if err := absent(path); err != nil {
			return err
		}
		repo, err := open(storeConfig, ref.Namespace)
		if err != nil {
			return storeFailure(err)
		}
		m, err := repo.Manifest(ctx, ref)
		if err != nil {
			return storeFailure(err)
		}
		if m.Format == FormatPgDumpCustom {
			return failed(ReasonWrongFormat, "%s is a %s artifact: it restores into a database (--target-url-env), not a file", ref, m.Format)
		}
		ds, ok := datastoreFor(m.Format)
		if !ok {
			return failed(ReasonWrongFormat, "this program has no reader of %s datastores", m.Format)
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".restore-*")
		if err != nil {
			return failed(ReasonTargetUnavailable, "the target's directory: %v", err)
		}
		defer func() { _ = os.Remove(tmp.Name()) }()
		start := time.Now()
		_, getErr := repo.Get(ctx, m.Ref, tmp)
		if getErr == nil {
			getErr = tmp.Sync()
		}
		if cerr := tmp.Close(); getErr == nil {
			getErr = cerr
		}
		if getErr != nil {
			recovery = time.Since(start)
			return storeFailure(getErr)
		}
		// Opened as its server opens it before it is moved into place: a server never starts on a
		// datastore it could not load.
		if ds.HasFacts(m.Facts) {
			mismatch, err := ds.Check(tmp.Name(), m.Facts)
			switch {
			case err != nil:
				return failed(ReasonRestoreFailed, "%v", err)
			case mismatch != "":
				return failed(ReasonContentMismatch, "%s: %s", m.Ref, mismatch)
			}
			checked = "opened with its library and matches the facts recorded at backup time"
		} else if err := ds.Open(tmp.Name()); err != nil {
			return failed(ReasonRestoreFailed, "%v", err)
		}
		if err := placeNew(tmp.Name(), path); err != nil {
			return err
		}
		recovery = time.Since(start)
		return nil
	}()
	return resultOf(ctx, err, VerifyResult{Result: ResultRestored, Reason: ReasonRestored, RecoverySeconds: recovery.Seconds(),
		Message: fmt.Sprintf("%s restored into %s in %.3fs: %s", ref, path, recovery.Seconds(), checked)}, "")
}

// absent refuses a path that exists (TargetNotEmpty) or whose directory cannot be read.
func absent(path string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return failed(ReasonTargetNotEmpty, "%s exists: a restore never writes over a datastore", path)
	case !errors.Is(err, fs.ErrNotExist):
		return failed(ReasonTargetUnavailable, "%v", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		return failed(ReasonTargetUnavailable, "the target's directory: %v", err)
	}
	return nil
}

// placeNew moves tmp to path only if nothing is at path (a datastore that appeared meanwhile is never
// replaced: renameat2's RENAME_NOREPLACE, or a hard link where the filesystem lacks it), then syncs the
// directory so the name survives a crash.
func placeNew(tmp, path string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOTSUP) {
		if err = os.Link(tmp, path); err == nil {
			err = os.Remove(tmp)
		}
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return failed(ReasonTargetNotEmpty, "%s appeared while the restore ran: a restore never writes over a datastore", path)
	case err != nil:
		return failed(ReasonTargetUnavailable, "move the restored datastore into place: %v", err)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return failed(ReasonTargetUnavailable, "%v", err)
	}
	defer func() { _ = dir.Close() }()
	if err := dir.Sync(); err != nil {
		return failed(ReasonTargetUnavailable, "sync the target's directory: %v", err)
	}
	return nil
}
