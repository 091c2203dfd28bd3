package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// checkFactsArgs refuses --pg-facts-url-env where it cannot give facts equal to the dump: only a pg_dump
// run by put (the `--` form) can be handed the snapshot, and only a custom-format dump is verified.
func checkFactsArgs(format Format, urlEnv string, command []string) error {
	if urlEnv == "" {
		return nil
	}
	if format != FormatPgDumpCustom {
		return fmt.Errorf("--pg-facts-url-env is for --format %s", FormatPgDumpCustom)
	}
	if len(command) == 0 || filepath.Base(command[0]) != "pg_dump" {
		return errors.New("--pg-facts-url-env needs the producer `-- pg_dump ...`: only pg_dump can be handed the snapshot the facts are counted in")
	}
	for _, a := range command[1:] {
		if a == "--snapshot" || strings.HasPrefix(a, "--snapshot=") {
			return errors.New("--pg-facts-url-env passes pg_dump its own --snapshot; do not give one")
		}
	}
	return nil
}

// putFacts collects the facts of one put: a PostgreSQL snapshot held open while pg_dump runs, or a count
// of a buntdb stream as it is uploaded. end releases what it holds; call it when the put is over.
type putFacts struct {
	// command is the producer's command line, with --snapshot added for pg_dump.
	command []string
	// facts are known before the data (PostgreSQL's, counted in the snapshot).
	facts map[string]string
	// wrap tees the data to a counter; afterData returns what the counter found.
	wrap      func(io.Reader) io.Reader
	afterData func() (map[string]string, error)
	end       func()
}

// beginFacts starts collecting the facts for format. file is the put's --file (its modification time is
// buntdb's base for relative expiries).
func beginFacts(ctx context.Context, format Format, urlEnv, file string, command []string) (*putFacts, error) {
	pf := &putFacts{command: command, wrap: func(r io.Reader) io.Reader { return r }, end: func() {}}
	switch {
	case format == FormatBuntDB:
		ds, ok := datastoreFor(format)
		if !ok {
			return nil, fmt.Errorf("this program has no reader of %s datastores", format)
		}
		var modTime time.Time
		if file != "" {
			if fi, err := os.Stat(file); err == nil {
				modTime = fi.ModTime()
			}
		}
		pr, pw := io.Pipe()
		done := make(chan struct{})
		var facts map[string]string
		var cerr error
		go func() {
			defer close(done)
			facts, cerr = ds.Facts(pr, modTime)
			// Keep reading after an error, so the upload that feeds the pipe never blocks on it.
			_, _ = io.Copy(io.Discard, pr)
		}()
		pf.wrap = func(r io.Reader) io.Reader { return io.TeeReader(r, pw) }
		pf.afterData = func() (map[string]string, error) {
			_ = pw.Close()
			<-done
			if cerr != nil {
				return nil, fmt.Errorf("the data is not a datastore its server can open: %w", cerr)
			}
			return facts, nil
		}
		pf.end = func() {
			_ = pw.CloseWithError(errors.New("the put ended"))
			<-done
		}
	case urlEnv != "":
		url := os.Getenv(urlEnv)
		if url == "" {
			return nil, fmt.Errorf("$%s (--pg-facts-url-env) is empty", urlEnv)
		}
		snap, err := beginSnapshot(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("facts from $%s: %w", urlEnv, err)
		}
		pf.end = snap.end
		pf.facts = snap.facts
		pf.command = append([]string{command[0], "--snapshot=" + snap.id}, command[1:]...)
	}
	return pf, nil
}

// snapshot is an open REPEATABLE READ READ ONLY transaction whose snapshot is exported for pg_dump.
type snapshot struct {
	id    string
	facts map[string]string
	end   func()
}

// userTables are the tables pg_dump dumps the data of when it dumps the whole database: ordinary tables
// and partitions (a partitioned table's rows are its partitions'), not temporary ones, not those of the
// system schemas, not an extension's own.
const userTables = `SELECT n.nspname, c.relname FROM pg_catalog.pg_class c
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE c.relkind = 'r' AND c.relpersistence <> 't'
	  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
	  AND n.nspname !~ '^pg_(toast|temp_|toast_temp_)'
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
	                  WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
	ORDER BY 1, 2`

// beginSnapshot connects to url, exports the snapshot of a REPEATABLE READ READ ONLY transaction and counts
// every user table's rows in it. The transaction stays open until end, so pg_dump --snapshot can import it
// and dumps exactly what was counted, whatever is written meanwhile.
func beginSnapshot(ctx context.Context, url string) (*snapshot, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errors.New("the URL does not parse as a PostgreSQL connection string")
	}
	scrub := secretScrubber(cfg.Password)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, scrub(err)
	}
	s := &snapshot{end: func() { _ = conn.Close(context.Background()) }}
	fail := func(err error) (*snapshot, error) {
		s.end()
		return nil, scrub(err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fail(err)
	}
	// The first statement of the transaction takes its snapshot: everything below sees that one.
	if err := tx.QueryRow(ctx, "SELECT pg_catalog.pg_export_snapshot()").Scan(&s.id); err != nil {
		return fail(err)
	}
	var database string
	var version int
	if err := tx.QueryRow(ctx, "SELECT pg_catalog.current_database(), pg_catalog.current_setting('server_version_num')::int").Scan(&database, &version); err != nil {
		return fail(err)
	}
	rows, err := tx.Query(ctx, userTables)
	if err != nil {
		return fail(err)
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PgTable, error) {
		var t PgTable
		return t, r.Scan(&t.Schema, &t.Name)
	})
	if err != nil {
		return fail(err)
	}
	for i := range tables {
		q := "SELECT count(*) FROM " + pgx.Identifier{tables[i].Schema, tables[i].Name}.Sanitize()
		if err := tx.QueryRow(ctx, q).Scan(&tables[i].Rows); err != nil {
			return fail(fmt.Errorf("count %s: %w", tables[i], err))
		}
	}
	if tables == nil {
		tables = []PgTable{}
	}
	doc, err := json.Marshal(tables)
	if err != nil {
		return fail(err)
	}
	s.facts = map[string]string{FactPgTables: string(doc), FactPgDatabase: database, FactPgServerVersionNum: strconv.Itoa(version)}
	s.end = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tx.Rollback(ctx)
		_ = conn.Close(ctx)
	}
	return s, nil
}

// secretScrubber returns a function that cuts secret out of an error's text, for errors that may quote
// a connection string.
func secretScrubber(secret string) func(error) error {
	return func(err error) error {
		if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
			return err
		}
		return errors.New(strings.ReplaceAll(err.Error(), secret, "[redacted]"))
	}
}
