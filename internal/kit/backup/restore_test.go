package backup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
)

// rowsDigest is count and md5 of every row of table, in a stable order: two databases with the same
// digest hold the same rows.
func rowsDigest(t *testing.T, e pgEnv, db, table string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), e.url(db))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var out string
	q := `SELECT count(*) || ':' || coalesce(md5(string_agg(r::text, ',' ORDER BY r::text)), '') FROM ` + table + ` r`
	if err := conn.QueryRow(t.Context(), q).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRestore is `backup restore` end to end on PostgreSQL 15 and versitygw, with the operator binary:
//   - a round trip row by row into an empty database (and the control: another database's artifact gives
//     the other rows);
//   - a target with a table is refused and left untouched;
//   - bytes flipped in the stored data: Failed, ChecksumMismatch (pg_restore may have written a part:
//     the result says Failed, so the database is never taken as restored);
//   - a manifest of another kind's artifact, a buntdb artifact, a missing variable: refused;
//   - no output names a password.
func TestRestore(t *testing.T) {
	ctx := t.Context()
	pg, err := postgrestest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Stop() }()
	e := pgEnv{t: t, pg: pg}
	cfg, store := newBucket(t, server, "restore-pg")
	storeFile := writeStoreFile(t, cfg)
	artifact := func(kind, name, id string) []string {
		return []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", kind, "--name", name, "--id", id}
	}
	noSecrets := func(texts ...string) {
		t.Helper()
		for _, s := range []string{pg.Password, cfg.Credentials.SecretAccessKey} {
			for _, text := range texts {
				if strings.Contains(text, s) {
					t.Fatalf("a secret printed: %s", text)
				}
			}
		}
	}
	restoreInto := func(db string, args ...string) (int, VerifyResult) {
		t.Helper()
		code, out, stderr := runBin(t, []string{"TARGET_URL=" + e.url(db)},
			append(append([]string{"restore"}, args...), "--target-url-env", "TARGET_URL")...)
		noSecrets(out, stderr)
		return code, parseResult(t, out)
	}

	e.exec("postgres", "CREATE DATABASE shop", "CREATE DATABASE other")
	e.exec("shop",
		`CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL, price numeric)`,
		`INSERT INTO items (name, price) SELECT 'item ' || i, i * 1.5 FROM generate_series(1, 2000) i`,
		`CREATE SCHEMA "Sales Dept"`,
		`CREATE TABLE "Sales Dept"."Order ""Lines""" (id int, qty int)`,
		`INSERT INTO "Sales Dept"."Order ""Lines""" SELECT i, i % 7 FROM generate_series(1, 250) i`)
	e.exec("other", `CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL, price numeric)`,
		`INSERT INTO items (name, price) SELECT 'other ' || i, i FROM generate_series(1, 77) i`)
	for _, db := range []string{"shop", "other"} {
		if code, _, stderr := runBin(t, nil, append(append([]string{"put"}, artifact("PostgresDatabase", db, "1")...),
			"--", "pg_dump", "-Fc", "--no-owner", "--no-privileges", "-d", e.url(db))...); code != 0 {
			t.Fatalf("put %s: exit %d: %s", db, code, stderr)
		}
	}
	shopItems, shopLines := rowsDigest(t, e, "shop", "items"), rowsDigest(t, e, "shop", `"Sales Dept"."Order ""Lines"""`)

	// The round trip, and the control.
	e.exec("postgres", "CREATE DATABASE restored", "CREATE DATABASE restored_other")
	code, res := restoreInto("restored", artifact("PostgresDatabase", "shop", "1")...)
	if code != 0 || res.Result != ResultRestored || res.Reason != ReasonRestored {
		t.Fatalf("restore: exit %d %+v", code, res)
	}
	if got := rowsDigest(t, e, "restored", "items"); got != shopItems || !strings.HasPrefix(got, "2000:") {
		t.Fatalf("restored items %s, source %s", got, shopItems)
	}
	if got := rowsDigest(t, e, "restored", `"Sales Dept"."Order ""Lines"""`); got != shopLines {
		t.Fatalf("restored lines %s, source %s", got, shopLines)
	}
	if code, res = restoreInto("restored_other", artifact("PostgresDatabase", "other", "1")...); code != 0 {
		t.Fatalf("restore other: exit %d %+v", code, res)
	}
	if got := rowsDigest(t, e, "restored_other", "items"); got == shopItems || got != rowsDigest(t, e, "other", "items") {
		t.Fatalf("the other artifact restored %s (shop %s)", got, shopItems)
	}

	// A target that holds a table: refused, untouched.
	before := rowsDigest(t, e, "restored_other", "items")
	code, res = restoreInto("restored_other", artifact("PostgresDatabase", "shop", "1")...)
	if code != 1 || res.Result != ResultFailed || res.Reason != ReasonTargetNotEmpty {
		t.Fatalf("restore into a database with tables: exit %d %+v", code, res)
	}
	if got := rowsDigest(t, e, "restored_other", "items"); got != before {
		t.Fatalf("the refused target changed: %s, was %s", got, before)
	}
	if countTables(t, e, "restored_other") != 1 {
		t.Fatal("the refused restore created tables")
	}

	// Corrupted data: Failed, whatever pg_restore wrote before the end of the stream.
	e.exec("postgres", "CREATE DATABASE corrupt")
	flip(t, store, Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "shop", ID: "1"})
	code, res = restoreInto("corrupt", artifact("PostgresDatabase", "shop", "1")...)
	if code != 1 || res.Result != ResultFailed || (res.Reason != ReasonChecksumMismatch && res.Reason != ReasonRestoreFailed) {
		t.Fatalf("restore of a corrupted artifact: exit %d %+v", code, res)
	}

	// Another kind's manifest in this kind's place: the manifest names its own kind and is refused.
	otherRef := Ref{Namespace: "team-a", Kind: "PostgresDatabase", Name: "other", ID: "1"}
	posing := Ref{Namespace: "team-a", Kind: "SojuBouncer", Name: "other", ID: "1"}
	for _, key := range [][2]string{{otherRef.ManifestKey(), posing.ManifestKey()}, {otherRef.DataKey(), posing.DataKey()}} {
		rc, err := store.Get(ctx, "team-a/"+key[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Put(ctx, "team-a/"+key[1], rc, ""); err != nil {
			t.Fatal(err)
		}
		_ = rc.Close()
	}
	e.exec("postgres", "CREATE DATABASE wrong_kind")
	code, res = restoreInto("wrong_kind", artifact("SojuBouncer", "other", "1")...)
	if code != 1 || res.Result != ResultFailed || !strings.Contains(res.Message, "manifest is of") {
		t.Fatalf("restore of a manifest of another kind: exit %d %+v", code, res)
	}
	if countTables(t, e, "wrong_kind") != 0 {
		t.Fatal("a refused artifact was restored")
	}

	// A datastore is not a dump.
	file := filepath.Join(t.TempDir(), "ircd.db")
	if err := os.WriteFile(file, []byte("not a dump"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, nil, append([]string{"put", "--format", "buntdb", "--file", file}, artifact("ErgoNetwork", "irc", "1")...)...); code != 0 {
		t.Fatalf("put buntdb: exit %d: %s", code, stderr)
	}
	if code, res = restoreInto("wrong_kind", artifact("ErgoNetwork", "irc", "1")...); code != 1 || res.Reason != ReasonWrongFormat {
		t.Fatalf("restore of a buntdb artifact: exit %d %+v", code, res)
	}

	// Usage: no variable, an empty variable.
	code, out, _ := runBin(t, nil, append([]string{"restore"}, artifact("PostgresDatabase", "other", "1")...)...)
	if res := parseResult(t, out); code != 2 || res.Reason != ReasonUsage {
		t.Fatalf("restore without --target-url-env: exit %d %+v", code, res)
	}
	code, out, _ = runBin(t, []string{"EMPTY_URL="}, append([]string{"restore", "--target-url-env", "EMPTY_URL"}, artifact("PostgresDatabase", "other", "1")...)...)
	if res := parseResult(t, out); code != 2 || res.Reason != ReasonUsage {
		t.Fatalf("restore with an empty variable: exit %d %+v", code, res)
	}
}
