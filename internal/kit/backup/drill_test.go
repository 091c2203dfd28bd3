package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
)

// The drills run the operator's binary, as a Job runs it; it is built once for these tests.
var (
	drillBinOnce sync.Once
	drillBin     string
)

func drillBinary(t *testing.T) string {
	t.Helper()
	drillBinOnce.Do(func() {
		if p := os.Getenv("OPERATOR_BINARY"); p != "" {
			drillBin = p
			return
		}
		dir, err := os.MkdirTemp("", "drill-bin-")
		if err != nil {
			t.Fatal(err)
		}
		drillBin = buildOperator(t, dir)
	})
	if drillBin == "" {
		t.Fatal("the operator binary did not build")
	}
	return drillBin
}

func buildOperator(t *testing.T, dir string) string {
	t.Helper()
	wd, _ := os.Getwd()
	root := filepath.Join(wd, "..", "..", "..")
	bin := filepath.Join(dir, "platform-operator")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}

// runBin runs the operator binary with `backup args...` and env added; it returns the exit code, stdout
// and stderr.
func runBin(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), drillBinary(t), append([]string{"backup"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// pgEnv is a PostgreSQL server for the drills with helpers for its databases.
type pgEnv struct {
	t  *testing.T
	pg *postgrestest.Server
}

func (e pgEnv) url(db string) string {
	return fmt.Sprintf("postgresql://%s:%s@%s:%d/%s?sslmode=disable", e.pg.User, e.pg.Password, e.pg.Host, e.pg.Port, db)
}

func (e pgEnv) exec(db string, sql ...string) {
	e.t.Helper()
	conn, err := pgx.Connect(e.t.Context(), e.url(db))
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	for _, s := range sql {
		if _, err := conn.Exec(e.t.Context(), s); err != nil {
			e.t.Fatalf("%s: %v", s, err)
		}
	}
}

func (e pgEnv) count(db, table string) int64 {
	e.t.Helper()
	conn, err := pgx.Connect(e.t.Context(), e.url(db))
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var n int64
	if err := conn.QueryRow(e.t.Context(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// parseResult reads a drill's JSON line.
func parseResult(t *testing.T, out string) VerifyResult {
	t.Helper()
	var r VerifyResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
		t.Fatalf("drill output %q: %v", out, err)
	}
	return r
}

// TestPgDrill is the PostgreSQL drill end to end on PostgreSQL 15 and versitygw, with the operator binary:
//   - put -- pg_dump with --pg-facts-url-env while a writer inserts rows, and a write made after the
//     snapshot was exported but before pg_dump started: the facts equal the dump, not the live database;
//   - verify restores into an empty scratch database: Verified (the control);
//   - bytes flipped in the stored data: ChecksumMismatch;
//   - another database's dump under this artifact's keys, its manifest carrying this artifact's facts:
//     ContentMismatch;
//   - a put without facts: NoFacts; a scratch database with a table: ScratchNotEmpty, the table untouched;
//   - no output names a password.
func TestPgDrill(t *testing.T) {
	ctx := t.Context()
	drillBinary(t) // built before the writer starts, so the writer's rows are those written around the put
	pg, err := postgrestest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Stop() }()
	e := pgEnv{t: t, pg: pg}
	cfg, store := newBucket(t, server, "drill-pg")
	storeFile := writeStoreFile(t, cfg)
	artifact := func(name, id string) []string {
		return []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "PostgresDatabase", "--name", name, "--id", id}
	}
	secrets := []string{pg.Password, cfg.Credentials.SecretAccessKey}
	noSecrets := func(what string, texts ...string) {
		t.Helper()
		for _, s := range secrets {
			for _, text := range texts {
				if strings.Contains(text, s) {
					t.Fatalf("%s prints a secret: %s", what, text)
				}
			}
		}
	}

	e.exec("postgres", "CREATE DATABASE shop", "CREATE DATABASE other")
	e.exec("shop",
		`CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL)`,
		`INSERT INTO items (name) SELECT 'item ' || i FROM generate_series(1, 3000) i`,
		`CREATE SCHEMA "Sales Dept"`,
		`CREATE TABLE "Sales Dept"."Order ""Lines""" (id int, qty int)`,
		`INSERT INTO "Sales Dept"."Order ""Lines""" SELECT i, i % 7 FROM generate_series(1, 250) i`,
		`CREATE TABLE empty_table (id int)`,
		`CREATE TABLE events (at date NOT NULL, what text) PARTITION BY RANGE (at)`,
		`CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')`,
		`INSERT INTO events SELECT '2026-03-01'::date + (i % 200), 'e' || i FROM generate_series(1, 400) i`)
	e.exec("other", `CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL)`,
		`INSERT INTO items (name) SELECT 'other ' || i FROM generate_series(1, 77) i`)

	// A pg_dump that first writes to the database (after put exported the snapshot, before the dump
	// starts), then runs the real pg_dump with put's arguments: deterministic proof that the dump reads
	// the snapshot. A writer inserts rows all along, too.
	wrapDir := t.TempDir()
	wrapper := filepath.Join(wrapDir, "pg_dump")
	script := "#!/bin/sh\npsql -q -v ON_ERROR_STOP=1 -d \"$DRILL_WRITE_URL\" -c \"INSERT INTO items (name) SELECT 'late ' || i FROM generate_series(1, 500) i\" || exit 1\nexec pg_dump \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	writerCtx, stopWriter := context.WithCancel(ctx)
	writerDone := make(chan int)
	go func() {
		n := 0
		defer func() { writerDone <- n }()
		conn, err := pgx.Connect(writerCtx, e.url("shop"))
		if err != nil {
			return
		}
		defer func() { _ = conn.Close(context.Background()) }()
		for writerCtx.Err() == nil {
			if _, err := conn.Exec(writerCtx, "INSERT INTO items (name) VALUES ('concurrent')"); err == nil {
				n++
			}
		}
	}()
	env := []string{"SHOP_URL=" + e.url("shop"), "DRILL_WRITE_URL=" + e.url("shop")}
	code, out, stderr := runBin(t, env, append(append([]string{"put", "--pg-facts-url-env", "SHOP_URL"}, artifact("shop", "1")...),
		"--", wrapper, "-Fc", "-d", e.url("shop"))...)
	stopWriter()
	written := <-writerDone
	if code != 0 {
		t.Fatalf("put -- pg_dump with facts: exit %d: %s", code, stderr)
	}
	var m Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	tables, ok, err := PgTablesOf(m.Facts)
	if !ok || err != nil {
		t.Fatalf("facts %v: %v", m.Facts, err)
	}
	t.Logf("facts: %s; the writer inserted %d rows during the put", m.Facts[FactPgTables], written)
	got := map[string]int64{}
	for _, tb := range tables {
		got[tb.String()] = tb.Rows
	}
	live := e.count("shop", "items")
	if got[`"public"."items"`] < 3000 || got[`"public"."items"`] > live-500 || got[`"Sales Dept"."Order ""Lines"""`] != 250 ||
		got[`"public"."events_2026"`] != 400 || len(got) != 4 {
		t.Fatalf("facts %v; live items %d (500 written after the snapshot)", got, live)
	}
	if m.Facts[FactPgDatabase] != "shop" || m.Facts[FactPgServerVersionNum] == "" {
		t.Fatalf("facts %v", m.Facts)
	}

	// Facts of one database and a pg_dump of another: PostgreSQL refuses to import the snapshot there, so
	// the put fails and leaves no artifact whose facts describe another database.
	code, _, stderr = runBin(t, []string{"OTHER_URL=" + e.url("other")}, append(append([]string{"put", "--pg-facts-url-env", "OTHER_URL"}, artifact("shop", "9")...),
		"--", "pg_dump", "-Fc", "-d", e.url("shop"))...)
	if code != 1 || !strings.Contains(stderr, "snapshot") {
		t.Fatalf("facts of other, dump of shop: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runBin(t, nil, append([]string{"get"}, artifact("shop", "9")...)...); code != 1 || !strings.Contains(stderr, "not complete") {
		t.Fatalf("get after the refused put: exit %d: %s", code, stderr)
	}

	scratchN := 0
	drill := func(name, id string, extra ...string) (int, VerifyResult, string) {
		t.Helper()
		scratchN++
		db := fmt.Sprintf("scratch_%d", scratchN)
		e.exec("postgres", "CREATE DATABASE "+db)
		resultFile := filepath.Join(t.TempDir(), "termination-log")
		code, out, stderr := runBin(t, []string{"SCRATCH_URL=" + e.url(db)},
			append(append([]string{"verify", "--scratch-url-env", "SCRATCH_URL", "--result-file", resultFile}, artifact(name, id)...), extra...)...)
		noSecrets("verify", out, stderr)
		res := parseResult(t, out)
		if doc, err := os.ReadFile(resultFile); err != nil || strings.TrimSpace(string(doc)) != strings.TrimSpace(out) || len(doc) > 4096 {
			t.Fatalf("result file %q (%v), stdout %q", doc, err, out)
		}
		return code, res, db
	}

	// The control: the backup restores and matches its facts.
	code, res, db := drill("shop", "1")
	if code != 0 || res.Result != ResultVerified || res.RecoverySeconds <= 0 {
		t.Fatalf("drill of the backup: exit %d %+v", code, res)
	}
	if n := e.count(db, "items"); n != got[`"public"."items"`] {
		t.Fatalf("the scratch database has %d items, the facts %d", n, got[`"public"."items"`])
	}
	t.Logf("verified: %+v", res)

	// Bytes flipped in the stored data, through the S3 API.
	code, _, _ = runBin(t, nil, append(append([]string{"put"}, artifact("shop", "2")...), "--", "pg_dump", "-Fc", "-d", e.url("other"))...)
	if code != 0 {
		t.Fatal("put of shop/2")
	}
	flip(t, store, Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "shop", ID: "1"})
	code, res, _ = drill("shop", "1")
	if code != 1 || res.Result != ResultFailed || res.Reason != ReasonChecksumMismatch {
		t.Fatalf("drill of a flipped artifact: exit %d %+v", code, res)
	}

	// Another database's dump, put with its own facts, then moved under shop's keys with shop's facts.
	if code, _, stderr := runBin(t, []string{"OTHER_URL=" + e.url("other")}, append(append([]string{"put", "--pg-facts-url-env", "OTHER_URL"}, artifact("other", "1")...),
		"--", "pg_dump", "-Fc", "-d", e.url("other"))...); code != 0 {
		t.Fatalf("put of other: %s", stderr)
	}
	if code, _, stderr := runBin(t, []string{"SHOP_URL=" + e.url("shop")}, append(append([]string{"put", "--pg-facts-url-env", "SHOP_URL"}, artifact("shop", "3")...),
		"--", "pg_dump", "-Fc", "-d", e.url("shop"))...); code != 0 {
		t.Fatalf("put of shop/3: %s", stderr)
	}
	swap(t, store, Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "other", ID: "1"}, Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "shop", ID: "3"})
	code, res, _ = drill("shop", "3")
	if code != 1 || res.Reason != ReasonContentMismatch {
		t.Fatalf("drill of another database's dump with this one's facts: exit %d %+v", code, res)
	}
	t.Logf("swapped: %s", res.Message)
	// Control of the swap: other's artifact itself is verified.
	if code, res, _ = drill("other", "1"); code != 0 {
		t.Fatalf("drill of other: exit %d %+v", code, res)
	}
	// The same tables, one row count off in the facts (the manifest rewritten, the data untouched).
	otherRef := Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "other", ID: "1"}
	rewriteFacts(t, store, otherRef, func(f map[string]string) {
		f[FactPgTables] = strings.Replace(f[FactPgTables], `"rows":77`, `"rows":78`, 1)
	})
	if code, res, _ = drill("other", "1"); code != 1 || res.Reason != ReasonContentMismatch || !strings.Contains(res.Message, "77 rows") {
		t.Fatalf("drill with a row count off by one: exit %d %+v", code, res)
	}
	rewriteFacts(t, store, otherRef, func(f map[string]string) {
		f[FactPgTables] = strings.Replace(f[FactPgTables], `"rows":78`, `"rows":77`, 1)
	})

	// A put without facts cannot be proven.
	if code, res, _ = drill("shop", "2"); code != 1 || res.Reason != ReasonNoFacts {
		t.Fatalf("drill of an artifact without facts: exit %d %+v", code, res)
	}

	// A scratch database with content is never restored into.
	e.exec("postgres", "CREATE DATABASE live")
	e.exec("live", "CREATE TABLE precious (v text)", "INSERT INTO precious VALUES ('keep me')")
	resultFile := filepath.Join(t.TempDir(), "r")
	code, out, stderr = runBin(t, []string{"SCRATCH_URL=" + e.url("live")}, append([]string{"verify", "--scratch-url-env", "SCRATCH_URL", "--result-file", resultFile}, artifact("other", "1")...)...)
	if res := parseResult(t, out); code != 1 || res.Reason != ReasonScratchNotEmpty {
		t.Fatalf("drill into a database with a table: exit %d %+v %s", code, res, stderr)
	}
	if n := e.count("live", "precious"); n != 1 {
		t.Fatalf("the live table has %d rows", n)
	}
	if n := countTables(t, e, "live"); n != 1 {
		t.Fatalf("the live database has %d tables after the refused drill", n)
	}

	// Usage: a pg_dump artifact without --scratch-url-env.
	code, out, _ = runBin(t, nil, append([]string{"verify"}, artifact("other", "1")...)...)
	if res := parseResult(t, out); code != 2 || res.Reason != ReasonUsage {
		t.Fatalf("verify without a scratch database: exit %d %+v", code, res)
	}
}

func countTables(t *testing.T, e pgEnv, db string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), e.url(db))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	names, err := UserTables(t.Context(), conn)
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// flip inverts one byte in the middle of ref's data, through the S3 API.
func flip(t *testing.T, store *objectstore.Store, ref Ref) {
	t.Helper()
	key := ref.Namespace + "/" + ref.DataKey()
	rc, err := store.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	data[len(data)/2] ^= 0xff
	if err := store.PutBytes(t.Context(), key, data, ""); err != nil {
		t.Fatal(err)
	}
}

// swap puts from's data under to's keys, with a manifest whose size and checksum are from's (so the
// checksum matches) and whose ref and facts are to's: a dump of another database posing as to.
func swap(t *testing.T, store *objectstore.Store, from, to Ref) {
	t.Helper()
	read := func(key string) []byte {
		rc, err := store.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rc.Close() }()
		var b bytes.Buffer
		if _, err := b.ReadFrom(rc); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var fromM, toM Manifest
	if err := json.Unmarshal(read(from.Namespace+"/"+from.ManifestKey()), &fromM); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(read(to.Namespace+"/"+to.ManifestKey()), &toM); err != nil {
		t.Fatal(err)
	}
	fromM.Ref, fromM.Facts = to, toM.Facts
	doc, _ := json.Marshal(fromM)
	if err := store.PutBytes(t.Context(), to.Namespace+"/"+to.DataKey(), read(from.Namespace+"/"+from.DataKey()), ""); err != nil {
		t.Fatal(err)
	}
	if err := store.PutBytes(t.Context(), to.Namespace+"/"+to.ManifestKey(), doc, ""); err != nil {
		t.Fatal(err)
	}
}

// rewriteFacts changes ref's manifest's facts in the store, leaving its data alone.
func rewriteFacts(t *testing.T, store *objectstore.Store, ref Ref, change func(map[string]string)) {
	t.Helper()
	key := ref.Namespace + "/" + ref.ManifestKey()
	rc, err := store.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	err = json.NewDecoder(rc).Decode(&m)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	change(m.Facts)
	doc, _ := json.Marshal(m)
	if err := store.PutBytes(t.Context(), key, doc, ""); err != nil {
		t.Fatal(err)
	}
}

// TestPutFactsRefusals: --pg-facts-url-env only with `-- pg_dump` of a custom-format artifact and without
// a --snapshot of the caller's (exit 2); a facts URL with a wrong password fails (exit 1) without printing
// it, and leaves no artifact.
func TestPutFactsRefusals(t *testing.T) {
	cfg, _ := newBucket(t, server, "facts-refusals")
	storeFile := writeStoreFile(t, cfg)
	id := []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "PostgresDatabase", "--name", "db", "--id", "1"}
	t.Setenv("FACTS_URL", "postgresql://postgres:hunter2-wrong@127.0.0.1:1/db?sslmode=disable")
	for _, args := range [][]string{
		append(append([]string{"put", "--pg-facts-url-env", "FACTS_URL"}, id...), "--", "sh", "-c", "echo x"),
		append([]string{"put", "--pg-facts-url-env", "FACTS_URL"}, id...),
		append(append([]string{"put", "--format", "buntdb", "--pg-facts-url-env", "FACTS_URL"}, id...), "--", "pg_dump", "-Fc"),
		append(append([]string{"put", "--pg-facts-url-env", "FACTS_URL"}, id...), "--", "pg_dump", "--snapshot=x", "-Fc"),
	} {
		if code, _, stderr := run(t, nil, args...); code != 2 || !strings.Contains(stderr, "pg-facts-url-env") {
			t.Errorf("%q: exit %d: %s", args, code, stderr)
		}
	}
	code, _, stderr := run(t, nil, append(append([]string{"put", "--pg-facts-url-env", "FACTS_URL"}, id...), "--", "pg_dump", "-Fc")...)
	if code != 1 || strings.Contains(stderr, "hunter2") {
		t.Fatalf("facts from an unreachable server: exit %d: %s", code, stderr)
	}
	if code, _, stderr := run(t, nil, append([]string{"get"}, id...)...); code != 1 || !strings.Contains(stderr, "not complete") {
		t.Fatalf("get after the failed put: exit %d: %s", code, stderr)
	}
}

// TestBuntDBDrill: an ircd.db with ergo's keys is put (the counts recorded while it uploads), verified
// (Verified, the control), then a torn copy (a write cut mid-record) is put and verified too (buntdb drops
// the torn command, and so did the facts); bytes flipped in the store give ChecksumMismatch, facts that
// do not match the data ContentMismatch, and a file that is not a datastore is refused at put.
func TestBuntDBDrill(t *testing.T) {
	cfg, store := newBucket(t, server, "drill-buntdb")
	storeFile := writeStoreFile(t, cfg)
	artifact := func(id string) []string {
		return []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "ErgoNetwork", "--name", "irc", "--id", id}
	}
	path := filepath.Join(t.TempDir(), "ircd.db")
	want, err := ergotest.WriteDatastore(path, ergotest.DatastoreFixture{
		Accounts: names(60), PendingAccounts: []string{"newbie"}, Unregistered: []string{"user7"},
		Channels: []string{"#ergo", "#chat", "#dev"}, DroppedChannels: []string{"#dev"},
	})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(id string) (int, VerifyResult) {
		t.Helper()
		code, out, stderr := runBin(t, nil, append([]string{"verify"}, artifact(id)...)...)
		if strings.Contains(out+stderr, cfg.Credentials.SecretAccessKey) {
			t.Fatalf("verify prints the secret: %s %s", out, stderr)
		}
		return code, parseResult(t, out)
	}
	code, out, stderr := runBin(t, nil, append([]string{"put", "--format", "buntdb", "--file", path}, artifact("1")...)...)
	if code != 0 {
		t.Fatalf("put: exit %d: %s", code, stderr)
	}
	var m Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if m.Facts["ergo.accounts"] != "59" || m.Facts["ergo.channels"] != "2" || m.Facts["ergo.pendingAccounts"] != "1" || m.Facts["ergo.schema"] != "24" {
		t.Fatalf("facts %v, fixture %+v", m.Facts, want)
	}
	if code, res := verify("1"); code != 0 || res.Result != ResultVerified {
		t.Fatalf("drill of the backup: exit %d %+v", code, res)
	}

	// A copy taken while ergo writes: the last record cut in the middle.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := filepath.Join(t.TempDir(), "ircd.db")
	if err := os.WriteFile(torn, data[:len(data)-20], 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runBin(t, nil, append([]string{"put", "--format", "buntdb", "--file", torn}, artifact("torn")...)...)
	if code != 0 {
		t.Fatalf("put of the torn copy: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil || m.Facts["buntdb.tornTailBytes"] == "0" {
		t.Fatalf("torn copy's facts %v (%v)", m.Facts, err)
	}
	if code, res := verify("torn"); code != 0 || res.Result != ResultVerified {
		t.Fatalf("drill of the torn copy: exit %d %+v", code, res)
	}

	// Flipped bytes.
	flip(t, store, Ref{Namespace: "team-a", Kind: "ErgoNetwork", Name: "irc", ID: "1"})
	if code, res := verify("1"); code != 1 || res.Reason != ReasonChecksumMismatch {
		t.Fatalf("drill of a flipped artifact: exit %d %+v", code, res)
	}

	// Another datastore under this artifact's keys, with this artifact's facts.
	other := filepath.Join(t.TempDir(), "ircd.db")
	if _, err := ergotest.WriteDatastore(other, ergotest.DatastoreFixture{Accounts: names(5), Channels: []string{"#x"}}); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, nil, append([]string{"put", "--format", "buntdb", "--file", other}, artifact("other")...)...); code != 0 {
		t.Fatalf("put of other: %s", stderr)
	}
	swap(t, store, Ref{Namespace: "team-a", Kind: "ErgoNetwork", Name: "irc", ID: "other"}, Ref{Namespace: "team-a", Kind: "ErgoNetwork", Name: "irc", ID: "torn"})
	if code, res := verify("torn"); code != 1 || res.Reason != ReasonContentMismatch {
		t.Fatalf("drill of another datastore with this one's facts: exit %d %+v", code, res)
	}

	// Not a datastore: refused at put, the artifact incomplete; and a missing artifact.
	code, _, stderr = runBin(t, nil, append([]string{"put", "--format", "buntdb", "--file", storeFile}, artifact("junk")...)...)
	if code != 1 || !strings.Contains(stderr, "not a buntdb file") {
		t.Fatalf("put of a file that is not a datastore: exit %d: %s", code, stderr)
	}
	if code, res := verify("junk"); code != 1 || res.Reason != ReasonIncomplete {
		t.Fatalf("drill of the refused put: exit %d %+v", code, res)
	}
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user%d", i)
	}
	return out
}

// TestPgDrillNewerServers: the restore side of the drill on PostgreSQL 16 and 17 servers (the dump taken
// from 15 with Debian's 15 tools, which restore into newer servers): Verified, and the control, a scratch
// database that is not empty, is refused on each.
func TestPgDrillNewerServers(t *testing.T) {
	ctx := t.Context()
	src, err := postgrestest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Stop() }()
	e := pgEnv{t: t, pg: src}
	e.exec("postgres", "CREATE DATABASE app")
	e.exec("app", `CREATE TABLE notes (id int PRIMARY KEY, body text)`, `INSERT INTO notes SELECT i, md5(i::text) FROM generate_series(1, 1234) i`)
	cfg, _ := newBucket(t, server, "drill-versions")
	storeFile := writeStoreFile(t, cfg)
	artifact := []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "PostgresDatabase", "--name", "app", "--id", "1"}
	if code, _, stderr := runBin(t, []string{"APP_URL=" + e.url("app")}, append(append([]string{"put", "--pg-facts-url-env", "APP_URL"}, artifact...),
		"--", "pg_dump", "-Fc", "-d", e.url("app"))...); code != 0 {
		t.Fatalf("put: %s", stderr)
	}
	for _, major := range []int{16, 17} {
		t.Run(fmt.Sprint(major), func(t *testing.T) {
			pg, err := postgrestest.StartVersion(ctx, major)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = pg.Stop() }()
			d := pgEnv{t: t, pg: pg}
			d.exec("postgres", "CREATE DATABASE scratch", "CREATE DATABASE used")
			d.exec("used", "CREATE TABLE t (v int)")
			code, out, stderr := runBin(t, []string{"SCRATCH_URL=" + d.url("scratch")}, append([]string{"verify", "--scratch-url-env", "SCRATCH_URL"}, artifact...)...)
			if res := parseResult(t, out); code != 0 || res.Result != ResultVerified {
				t.Fatalf("drill on PostgreSQL %d: exit %d %+v %s", major, code, res, stderr)
			}
			if n := d.count("scratch", "notes"); n != 1234 {
				t.Fatalf("PostgreSQL %d scratch has %d notes", major, n)
			}
			code, out, _ = runBin(t, []string{"SCRATCH_URL=" + d.url("used")}, append([]string{"verify", "--scratch-url-env", "SCRATCH_URL"}, artifact...)...)
			if res := parseResult(t, out); code != 1 || res.Reason != ReasonScratchNotEmpty {
				t.Fatalf("control on PostgreSQL %d: exit %d %+v", major, code, res)
			}
		})
	}
}
