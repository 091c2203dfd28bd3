package backup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// verifyCommand is the restore drill: `platform-operator backup verify ...`.
const verifyCommand = "verify"

// The results of a drill.
const (
	ResultVerified = "Verified"
	ResultFailed   = "Failed"
)

// The reasons of a drill's result; a controller maps them to conditions.
const (
	// ReasonVerified: the checksum matched, the artifact restored, and its content equals the facts.
	ReasonVerified = "Verified"
	// ReasonChecksumMismatch: the data does not match the manifest's size or SHA-256.
	ReasonChecksumMismatch = "ChecksumMismatch"
	// ReasonContentMismatch: the restored content differs from the facts recorded at backup time (other
	// tables, other row counts, other accounts or channels): the dump of something else, or a lie.
	ReasonContentMismatch = "ContentMismatch"
	// ReasonRestoreFailed: pg_restore failed, or buntdb cannot open the datastore.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonNoFacts: the manifest has no facts to compare with (a put without them), so nothing can be
	// proven beyond the checksum.
	ReasonNoFacts = "NoFacts"
	// ReasonIncomplete: the artifact has no manifest (never completed, or deleted).
	ReasonIncomplete = "Incomplete"
	// ReasonScratchNotEmpty: the scratch database holds tables; a drill never restores into a database
	// with content, which might be a live one.
	ReasonScratchNotEmpty = "ScratchNotEmpty"
	// ReasonScratchUnavailable: the scratch database cannot be reached.
	ReasonScratchUnavailable = "ScratchUnavailable"
	// ReasonStoreCredentials, ReasonNoBucket and ReasonStoreError: the store refused the credentials,
	// has no such bucket, or failed otherwise.
	ReasonStoreCredentials = "StoreCredentials"
	ReasonNoBucket         = "NoBucket"
	ReasonStoreError       = "StoreError"
	// ReasonInterrupted: the drill was signalled.
	ReasonInterrupted = "Interrupted"
	// ReasonUsage: the arguments are wrong (exit status 2).
	ReasonUsage = "Usage"
)

// VerifyResult is what a drill prints (one JSON line) and writes to --result-file.
type VerifyResult struct {
	Result string `json:"result"`
	Reason string `json:"reason"`
	// RecoverySeconds is the measured recovery time: from the first byte asked of the store until the
	// restore ended (pg_restore exited; buntdb opened the downloaded file, as ergo does when it starts).
	RecoverySeconds float64 `json:"recoverySeconds"`
	Message         string  `json:"message"`
}

// maxResult is the size a result must fit in: a container's termination message is at most 4096 bytes.
const maxResult = 4096

// drillError is a failed drill's reason and message.
type drillError struct{ reason, msg string }

func (e *drillError) Error() string { return e.msg }

func failed(reason, format string, args ...any) error {
	return &drillError{reason: reason, msg: fmt.Sprintf(format, args...)}
}

// verifyMain runs `platform-operator backup verify` with args (those after "verify").
func verifyMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return resultMain(ctx, resultCommand{
		name:    verifyCommand,
		urlFlag: "scratch-url-env",
		urlHelp: "the environment variable holding the empty scratch database's postgresql:// URL (pg_dump-custom)",
		ok:      ResultVerified,
		run: func(ctx context.Context, storeConfig string, ref Ref, scratch, _ string) VerifyResult {
			return drill(ctx, storeConfig, ref, scratch)
		},
	}, args, stdout, stderr)
}

// resultCommand is a subcommand that acts on one artifact and a database named by an environment
// variable, and reports one result (verify, restore).
type resultCommand struct {
	name             string
	urlFlag, urlHelp string
	// fileFlag, when set, names a file the command acts on instead of a database (restore's
	// --target-file).
	fileFlag, fileHelp string
	// ok is the result that exits 0.
	ok string
	// run acts on ref; dbURL is the database's URL, empty when the variable flag was not given; file is
	// fileFlag's value.
	run func(ctx context.Context, storeConfig string, ref Ref, dbURL, file string) VerifyResult
}

// resultMain parses cmd's arguments (the artifact's, the database variable, --result-file), runs it, and
// prints its result as one JSON line (also to --result-file); it exits 0 on cmd.ok, 1 on a failure, 2 on
// a usage error.
func resultMain(ctx context.Context, cmd resultCommand, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("backup "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	storeConfig := fs.String("store-config", "", "the store configuration file (JSON or YAML, docs/backup.md)")
	var ref Ref
	fs.StringVar(&ref.Namespace, "namespace", "", "the source object's namespace")
	fs.StringVar(&ref.Kind, "kind", "", "the source object's kind")
	fs.StringVar(&ref.Name, "name", "", "the source object's name")
	fs.StringVar(&ref.ID, "id", "", "the backup's id")
	urlEnv := fs.String(cmd.urlFlag, "", cmd.urlHelp)
	file := new(string)
	if cmd.fileFlag != "" {
		file = fs.String(cmd.fileFlag, "", cmd.fileHelp)
	}
	resultFile := fs.String("result-file", "", "also write the result here (a Job: /dev/termination-log)")
	report := func(res VerifyResult, code int) int {
		doc := encodeResult(res)
		fmt.Fprintf(stdout, "%s\n", doc)
		if *resultFile != "" {
			if err := os.WriteFile(*resultFile, doc, 0o644); err != nil {
				fmt.Fprintf(stderr, "backup %s: result file: %v\n", cmd.name, err)
			}
		}
		return code
	}
	usageErr := func(msg string) int {
		fmt.Fprintf(stderr, "backup %s: %s\n", cmd.name, msg)
		return report(VerifyResult{Result: ResultFailed, Reason: ReasonUsage, Message: msg}, exitUsage)
	}
	if err := fs.Parse(args); err != nil {
		return usageErr(err.Error())
	}
	if fs.NArg() > 0 {
		return usageErr(fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if *storeConfig == "" {
		return usageErr("--store-config is required")
	}
	if err := ref.Validate(); err != nil {
		return usageErr(err.Error())
	}
	dbURL := ""
	if *urlEnv != "" {
		if dbURL = os.Getenv(*urlEnv); dbURL == "" {
			return usageErr(fmt.Sprintf("$%s (--%s) is empty", *urlEnv, cmd.urlFlag))
		}
	}
	if dbURL != "" && *file != "" {
		return usageErr(fmt.Sprintf("--%s and --%s exclude each other: a restore goes into a database or a file", cmd.urlFlag, cmd.fileFlag))
	}
	res := cmd.run(ctx, *storeConfig, ref, dbURL, *file)
	switch {
	case res.Reason == ReasonUsage:
		return report(res, exitUsage)
	case res.Result != cmd.ok:
		return report(res, exitError)
	}
	return report(res, exitOK)
}

// encodeResult is res as one JSON document of at most maxResult bytes (the message cut if need be).
func encodeResult(res VerifyResult) []byte {
	for {
		doc, _ := json.Marshal(res)
		if len(doc) <= maxResult || res.Message == "" {
			return doc
		}
		cut := max(0, len(res.Message)-(len(doc)-maxResult)-16)
		res.Message = strings.ToValidUTF8(res.Message[:cut], "") + " [cut]"
	}
}

// drill runs the drill of ref; scratch is the scratch database's URL (pg_dump-custom).
func drill(ctx context.Context, storeConfig string, ref Ref, scratch string) VerifyResult {
	var recovery time.Duration
	err := func() error {
		repo, err := open(storeConfig, ref.Namespace)
		if err != nil {
			return storeFailure(err)
		}
		m, err := repo.Manifest(ctx, ref)
		if err != nil {
			return storeFailure(err)
		}
		switch m.Format {
		case FormatPgDumpCustom:
			if scratch == "" {
				return failed(ReasonUsage, "%s is a %s artifact: --scratch-url-env is required", ref, m.Format)
			}
			recovery, err = verifyPgDump(ctx, repo, m, scratch)
		case FormatBuntDB:
			recovery, err = verifyBuntDB(ctx, repo, m)
		default:
			err = failed(ReasonRestoreFailed, "format %q has no drill", m.Format)
		}
		return err
	}()
	return resultOf(ctx, err, VerifyResult{Result: ResultVerified, Reason: ReasonVerified, RecoverySeconds: recovery.Seconds(),
		Message: fmt.Sprintf("%s restored in %.3fs and matches the facts recorded at backup time", ref, recovery.Seconds())}, dbURL(scratch))
}

// dbURL marks a database URL for resultOf, which cuts its password out of messages.
type dbURL string

// password is the URL's password, in its user information or its query; empty when it has none.
func (u dbURL) password() string {
	parsed, err := url.Parse(string(u))
	if err != nil {
		return ""
	}
	if parsed.User != nil {
		if p, ok := parsed.User.Password(); ok && p != "" {
			return p
		}
	}
	return parsed.Query().Get("password")
}

// resultOf is ok when err is nil, else a failed result with err's reason (a drillError's, Interrupted when
// ctx ended, StoreError otherwise) and its message without the password of db.
func resultOf(ctx context.Context, err error, ok VerifyResult, db dbURL) VerifyResult {
	if err == nil {
		return ok
	}
	res := VerifyResult{Result: ResultFailed, Reason: ReasonStoreError, RecoverySeconds: ok.RecoverySeconds,
		Message: secretScrubber(db.password())(err).Error()}
	var de *drillError
	switch {
	case errors.As(err, &de):
		res.Reason = de.reason
	case ctx.Err() != nil:
		res.Reason = ReasonInterrupted
	}
	return res
}

// storeFailure classifies an error of the store or the manifest.
func storeFailure(err error) error {
	reason := ReasonStoreError
	switch {
	case errors.Is(err, ErrIncomplete):
		reason = ReasonIncomplete
	case errors.Is(err, ErrChecksum):
		reason = ReasonChecksumMismatch
	case errors.Is(err, objectstore.ErrCredentials):
		reason = ReasonStoreCredentials
	case errors.Is(err, objectstore.ErrNoBucket):
		reason = ReasonNoBucket
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		reason = ReasonInterrupted
	}
	return &drillError{reason: reason, msg: err.Error()}
}

// tolerant passes writes on until the first error, then swallows them: a consumer that stops (pg_restore
// failing, pg_restore -l done with the table of contents) must not stop the stream, whose end is where
// the checksum is decided.
type tolerant struct {
	w   io.Writer
	err error
}

func (t *tolerant) Write(p []byte) (int, error) {
	if t.err == nil {
		_, t.err = t.w.Write(p)
	}
	return len(p), nil
}

// tail keeps the last bytes written to it: a tool's standard error, bounded.
type tail struct{ buf []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 2048; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string { return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "")) }

// libpqTarget splits a postgresql:// URL into one without the password, for a tool's command line, and
// the password, for its environment (PGPASSWORD): a command line is readable by anyone who lists
// processes.
func libpqTarget(raw string) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", "", errors.New("the database must be given as a postgresql:// URL")
	}
	password := ""
	if u.User != nil {
		password, _ = u.User.Password()
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if p := q.Get("password"); p != "" {
		password = p
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String(), password, nil
}

// verifyPgDump restores m's dump into the scratch database as it streams from the store (pg_restore reads
// the one stream; a second pg_restore -l reads the same bytes for the table of contents), then compares
// the TOC's TABLE DATA entries and each table's rows with the facts.
func verifyPgDump(ctx context.Context, repo *Repository, m Manifest, scratch string) (time.Duration, error) {
	tables, ok, err := PgTablesOf(m.Facts)
	if !ok {
		return 0, failed(ReasonNoFacts, "%s has no %s fact (a put without --pg-facts-url-env): nothing to compare the restore with", m.Ref, FactPgTables)
	}
	if err != nil {
		return 0, failed(ReasonContentMismatch, "%v", err)
	}
	conn, err := connectEmpty(ctx, scratch, emptyTarget{what: "scratch database", notEmpty: ReasonScratchNotEmpty,
		unavailable: ReasonScratchUnavailable, verb: "a drill restores only into an empty database"})
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	recovery, listing, err := pgRestore(ctx, repo, m, scratch, true)
	if err != nil {
		return recovery, err
	}
	if err := compareTOC(listing, tables); err != nil {
		return recovery, failed(ReasonContentMismatch, "%s: %v", m.Ref, err)
	}
	var diffs []string
	for _, t := range tables {
		var rows int64
		q := "SELECT count(*) FROM " + pgx.Identifier{t.Schema, t.Name}.Sanitize()
		if err := conn.QueryRow(ctx, q).Scan(&rows); err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: %v", t, err))
			continue
		}
		if rows != t.Rows {
			diffs = append(diffs, fmt.Sprintf("%s has %d rows, the facts %d", t, rows, t.Rows))
		}
	}
	if len(diffs) > 0 {
		return recovery, failed(ReasonContentMismatch, "%s: %s", m.Ref, strings.Join(diffs, "; "))
	}
	return recovery, nil
}

// emptyTarget names a database that must hold no table, and the reasons of its refusals.
type emptyTarget struct {
	what                  string
	notEmpty, unavailable string
	// verb is why it must be empty, for the refusal's message.
	verb string
}

// connectEmpty connects to the database at dbURL and refuses it when it holds any user table (a restore
// never writes into a database with content, which might be a live one). The caller closes the
// connection.
func connectEmpty(ctx context.Context, dbURL string, t emptyTarget) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, failed(t.unavailable, "%s: %v", t.what, err)
	}
	existing, err := UserTables(ctx, conn)
	if err != nil {
		_ = conn.Close(context.Background())
		return nil, failed(t.unavailable, "%s: %v", t.what, err)
	}
	if len(existing) > 0 {
		_ = conn.Close(context.Background())
		return nil, failed(t.notEmpty, "the %s holds %d tables (%s...): %s", t.what, len(existing), existing[0], t.verb)
	}
	return conn, nil
}

// pgRestore streams m's data from the store into `pg_restore --no-owner --no-acl --exit-on-error -d`
// the database at dbURL (its password in PGPASSWORD, never on the command line) and, with toc, into
// `pg_restore -l` for the table of contents it returns. It fails unless the checksum matched at the end of
// the stream AND pg_restore exited 0: pg_restore may have written part of the data before a corruption
// shows, so a failure leaves the database unusable, never restored. The duration is the recovery time,
// from the first byte asked of the store until pg_restore exited.
func pgRestore(ctx context.Context, repo *Repository, m Manifest, dbURL string, toc bool) (time.Duration, string, error) {
	target, password, err := libpqTarget(dbURL)
	if err != nil {
		return 0, "", failed(ReasonUsage, "%v", err)
	}
	env := append(os.Environ(), "PGPASSWORD="+password)
	restore := exec.CommandContext(ctx, "pg_restore", "--no-owner", "--no-acl", "--exit-on-error", "-d", target)
	restore.Env = env
	var restoreErr, tocErr tail
	var tocOut bytes.Buffer
	restore.Stderr = &restoreErr
	restoreIn, err := restore.StdinPipe()
	if err != nil {
		return 0, "", err
	}
	sinks := []io.Writer{&tolerant{w: restoreIn}}
	closers := []io.Closer{restoreIn}
	var list *exec.Cmd
	if toc {
		list = exec.CommandContext(ctx, "pg_restore", "-l")
		list.Env, list.Stderr, list.Stdout = env, &tocErr, &tocOut
		tocIn, err := list.StdinPipe()
		if err != nil {
			return 0, "", err
		}
		sinks = append(sinks, &tolerant{w: tocIn})
		closers = append(closers, tocIn)
	}
	start := time.Now()
	if err := restore.Start(); err != nil {
		return 0, "", failed(ReasonRestoreFailed, "pg_restore: %v", err)
	}
	if list != nil {
		if err := list.Start(); err != nil {
			_ = restoreIn.Close()
			_ = restore.Wait()
			return 0, "", failed(ReasonRestoreFailed, "pg_restore -l: %v", err)
		}
	}
	_, getErr := repo.Get(ctx, m.Ref, io.MultiWriter(sinks...))
	for _, c := range closers {
		_ = c.Close()
	}
	restoreWait := restore.Wait()
	recovery := time.Since(start)
	var tocWait error
	if list != nil {
		tocWait = list.Wait()
	}
	switch {
	case getErr != nil:
		return recovery, "", storeFailure(getErr)
	case restoreWait != nil:
		return recovery, "", failed(ReasonRestoreFailed, "pg_restore: %v: %s", restoreWait, restoreErr.String())
	case tocWait != nil:
		return recovery, "", failed(ReasonRestoreFailed, "pg_restore -l: %v: %s", tocWait, tocErr.String())
	}
	return recovery, tocOut.String(), nil
}

// UserTables are the user tables of the database conn is connected to (those pg_dump dumps the data
// of), as schema.name: a restore or a drill refuses a database that holds any.
func UserTables(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, userTables)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var t PgTable
		err := r.Scan(&t.Schema, &t.Name)
		return t.String(), err
	})
}

// compareTOC checks that the TABLE DATA entries of a `pg_restore -l` listing are exactly the facts' tables.
// A line is "<id>; <catalog oid> <oid> TABLE DATA <schema> <name> <owner>"; names are printed unquoted, so
// an entry is matched by the longest "<schema> <name> " of the facts it starts with.
func compareTOC(listing string, tables []PgTable) error {
	want := map[string]bool{}
	for _, t := range tables {
		want[t.Schema+" "+t.Name+" "] = false
	}
	var extra []string
	sc := bufio.NewScanner(strings.NewReader(listing))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, ";") {
			continue
		}
		_, rest, ok := strings.Cut(line, " TABLE DATA ")
		if !ok {
			continue
		}
		best := ""
		for k := range want {
			if strings.HasPrefix(rest+" ", k) && len(k) > len(best) {
				best = k
			}
		}
		if best == "" || want[best] {
			extra = append(extra, strings.TrimSpace(rest))
			continue
		}
		want[best] = true
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var missing []string
	for k, seen := range want {
		if !seen {
			missing = append(missing, strings.TrimSpace(k))
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return nil
	}
	var diffs []string
	if len(extra) > 0 {
		slices.Sort(extra)
		diffs = append(diffs, fmt.Sprintf("data of tables the facts do not name %q", extra))
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		diffs = append(diffs, fmt.Sprintf("tables the facts name without data in the dump %q", missing))
	}
	return fmt.Errorf("the dump's table of contents differs from the facts: %s", strings.Join(diffs, "; "))
}

// verifyBuntDB downloads m's datastore to a temporary file (TMPDIR) and has the format's Datastore open it
// with the datastore's own library (buntdb, as ergo does) and compare it with the facts.
func verifyBuntDB(ctx context.Context, repo *Repository, m Manifest) (time.Duration, error) {
	ds, ok := datastoreFor(m.Format)
	if !ok {
		return 0, failed(ReasonRestoreFailed, "this program has no reader of %s datastores", m.Format)
	}
	if !ds.HasFacts(m.Facts) {
		return 0, failed(ReasonNoFacts, "%s has no facts of its datastore: nothing to compare the restore with", m.Ref)
	}
	dir, err := os.MkdirTemp("", "backup-verify-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "datastore")
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	_, getErr := repo.Get(ctx, m.Ref, f)
	if cerr := f.Close(); getErr == nil && cerr != nil {
		getErr = cerr
	}
	if getErr != nil {
		return time.Since(start), storeFailure(getErr)
	}
	mismatch, err := ds.Check(path, m.Facts)
	recovery := time.Since(start)
	switch {
	case err != nil:
		return recovery, failed(ReasonRestoreFailed, "%v", err)
	case mismatch != "":
		return recovery, failed(ReasonContentMismatch, "%s: %s", m.Ref, mismatch)
	}
	return recovery, nil
}
