package backup

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
)

// TestPgDumpRoundTrip is the whole data path with the real tools, as a backup Job and a restore run it:
// `pg_dump -Fc | platform-operator backup put` from a database with rows on a real PostgreSQL 15, the
// database dropped, then `platform-operator backup get | pg_restore` into a new database, whose rows are
// compared with the source's. The control restores another database's artifact into a third database
// and finds other rows, so the comparison can fail.
func TestPgDumpRoundTrip(t *testing.T) {
	for _, tool := range []string{"pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: run `make postgres` (Debian's postgresql-15 brings it): %v", tool, err)
		}
	}
	ctx := t.Context()
	pg, err := postgrestest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Stop() }()
	cfg, _ := newBucket(t, server, "pgdump")
	storeFile := writeStoreFile(t, cfg)
	version, err := exec.CommandContext(ctx, "pg_dump", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}

	exec1 := func(db, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, pg.ConnString(pg.User, pg.Password, db))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	rows := func(db string) string {
		t.Helper()
		conn, err := pgx.Connect(ctx, pg.ConnString(pg.User, pg.Password, db))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(ctx) }()
		var out string
		if err := conn.QueryRow(ctx, `SELECT count(*) || ':' || md5(string_agg(id || '=' || name || '=' || price, ',' ORDER BY id)) FROM items`).Scan(&out); err != nil {
			t.Fatalf("rows of %s: %v", db, err)
		}
		return out
	}
	artifact := func(name string) []string {
		return []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "PostgresDatabase", "--name", name, "--id", "20261128-1200"}
	}

	want := map[string]string{}
	for db, n := range map[string]int{"shop": 5000, "other": 300} {
		exec1("postgres", "CREATE DATABASE "+db)
		exec1(db, fmt.Sprintf(`CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2));
			INSERT INTO items SELECT i, '%s item ' || i, i * 1.25 FROM generate_series(1, %d) i`, db, n))
		want[db] = rows(db)

		// shop: platform-operator backup put ... -- pg_dump -Fc ... (put runs the dump and commits on its
		// exit status); other: pg_dump -Fc ... | platform-operator backup put ... (a pipe).
		args := append([]string{"put", "--format", "pg_dump-custom", "--tool-version", strings.TrimSpace(string(version))}, artifact(db)...)
		var putErr, putOut bytes.Buffer
		if db == "shop" {
			args = append(args, "--", "pg_dump", "-Fc", "-d", pg.ConnString(pg.User, pg.Password, db))
			if code := Main(ctx, args, nil, &putOut, &putErr); code != 0 {
				t.Fatalf("backup put -- pg_dump %s: exit %d %s", db, code, putErr.String())
			}
		} else {
			dump := exec.CommandContext(ctx, "pg_dump", "-Fc", "-d", pg.ConnString(pg.User, pg.Password, db))
			stdout, err := dump.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var dumpErr bytes.Buffer
			dump.Stderr = &dumpErr
			if err := dump.Start(); err != nil {
				t.Fatal(err)
			}
			code := Main(ctx, args, stdout, &putOut, &putErr)
			if err := dump.Wait(); err != nil || code != 0 {
				t.Fatalf("pg_dump %s | backup put: pg_dump %v %s; put exit %d %s", db, err, dumpErr.String(), code, putErr.String())
			}
		}
		t.Logf("backup put %s: %s", db, strings.TrimSpace(putOut.String()))
		exec1("postgres", "DROP DATABASE "+db)
	}
	if want["shop"] == want["other"] {
		t.Fatal("control: the two databases have the same rows")
	}

	restore := func(from, into string) {
		t.Helper()
		exec1("postgres", "CREATE DATABASE "+into)
		// platform-operator backup get ... | pg_restore -d into
		load := exec.CommandContext(ctx, "pg_restore", "--no-owner", "--no-acl", "--exit-on-error", "-d", pg.ConnString(pg.User, pg.Password, into))
		stdin, err := load.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var loadErr, getErr bytes.Buffer
		load.Stderr = &loadErr
		if err := load.Start(); err != nil {
			t.Fatal(err)
		}
		code := Main(ctx, append([]string{"get"}, artifact(from)...), nil, stdin, &getErr)
		_ = stdin.Close()
		if err := load.Wait(); err != nil || code != 0 {
			t.Fatalf("backup get %s | pg_restore %s: get exit %d %s; pg_restore %v %s", from, into, code, getErr.String(), err, loadErr.String())
		}
	}
	restore("shop", "shop_restored")
	if got := rows("shop_restored"); got != want["shop"] {
		t.Errorf("rows restored from shop's backup = %s, want %s", got, want["shop"])
	}
	// Control: another artifact gives other rows, so the comparison above can fail.
	restore("other", "shop_control")
	if got := rows("shop_control"); got == want["shop"] || got != want["other"] {
		t.Errorf("rows restored from other's backup = %s; want other's %s, not shop's %s", got, want["other"], want["shop"])
	}
}
