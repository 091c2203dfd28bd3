package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// role owns the benchmark's databases and runs every step, as a PostgresDatabase's own role does: the
// dump, the drill and the restore run as the database's role, never as a superuser.
const role = "bench_owner"

// fillBatch rows are inserted per statement: about 30 MiB of table.
const fillBatch = 100000

// postgres measures a database of size bytes: fill, put (pg_dump -Fc | backup put), verify into an empty
// scratch database, restore into an empty database, and checks the restored rows.
func (b *bench) postgres(ctx context.Context, size int64) error {
	fmt.Fprintf(os.Stderr, "PostgreSQL, %s\n", human(size))
	admin, err := b.pg.Connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = admin.Close(context.Background()) }()
	password := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP ROLE IF EXISTS %s", role)); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", role, password)); err != nil {
		return err
	}
	tag := fmt.Sprintf("%dmib", size>>20)
	src, scratch, restored := "src_"+tag, "scratch_"+tag, "restored_"+tag
	for _, db := range []string{src, scratch, restored} {
		if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", db, role)); err != nil {
			return err
		}
	}
	defer func() {
		for _, db := range []string{src, scratch, restored} {
			_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db)
		}
		_, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
	}()
	dbURL := func(db string) string {
		u := url.URL{Scheme: "postgresql", User: url.UserPassword(role, password),
			Host: fmt.Sprintf("%s:%d", b.pg.Host, b.pg.Port), Path: "/" + db, RawQuery: "sslmode=disable"}
		return u.String()
	}

	fmt.Fprintln(os.Stderr, "  fill")
	fillStart := time.Now()
	dbSize, rows, err := fill(ctx, dbURL(src), size)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	fmt.Fprintf(os.Stderr, "  filled %s (%d rows) in %s\n", human(dbSize), rows, time.Since(fillStart).Round(time.Second))

	// The backup: the Job's container, its URL from the source's Secret.
	name := "db-" + tag
	bk := newBackup(backupv1.SourcePostgresDatabase, name)
	in := jobs.Input{Store: b.store, AccessKeyIDKey: "accessKeyID", SecretAccessKeyKey: "secretAccessKey",
		SourceSecret: name, ID: bk.Status.ID, ToolVersion: "pg_dump (PostgreSQL) 15"}
	cm, err := jobs.StoreConfigMap(bk, in)
	if err != nil {
		return err
	}
	if err := b.add(ctx, cm, b.secret(name, dbURL(src)), b.secret(name+"-scratch", dbURL(scratch)), b.secret(name+"-restored", dbURL(restored))); err != nil {
		return err
	}
	put, putProcs, err := b.step(ctx, "put (pg_dump -Fc | backup put)", jobs.Job(bk, in), nil)
	if err != nil {
		return err
	}
	ref := backup.Ref{Namespace: namespace, Kind: string(backupv1.SourcePostgresDatabase), Name: name, ID: bk.Status.ID}
	m, err := b.repo.Manifest(ctx, ref)
	if err != nil {
		return fmt.Errorf("the put's manifest: %w", err)
	}
	b.record(row{what: "PostgreSQL", size: dbSize, artifact: m.Size, step: "backup: `pg_dump -Fc` → `backup put`", wall: put, procs: putProcs})

	// The drill: the drill Job's container into the empty scratch database, then the scratch dropped (the
	// operator deletes its scratch PostgresDatabase).
	drill := jobs.DrillJob(bk, jobs.DrillInput{Store: b.store, AccessKeyIDKey: "accessKeyID", SecretAccessKeyKey: "secretAccessKey",
		ScratchSecret: name + "-scratch"})
	verify, verifyProcs, err := b.step(ctx, "verify (backup verify → pg_restore into the scratch database)", drill, nil)
	if err != nil {
		return err
	}
	b.record(row{what: "PostgreSQL", size: dbSize, artifact: m.Size, step: "drill: `backup verify` (pg_restore into a scratch database, row counts)", wall: verify, procs: verifyProcs})
	if _, err := admin.Exec(ctx, "DROP DATABASE "+scratch); err != nil {
		return err
	}

	// The restore: the restore Job's container into the empty database of a new PostgresDatabase.
	target := &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Name: name + "-restored", Namespace: namespace}}
	rin := jobs.RestoreInput{Store: b.store, AccessKeyIDKey: "accessKeyID", SecretAccessKeyKey: "secretAccessKey",
		CredentialsSecret: name + "-restored", SourceName: name, ID: bk.Status.ID}
	rcm, err := jobs.RestoreConfigMap(target, rin)
	if err != nil {
		return err
	}
	if err := b.add(ctx, rcm); err != nil {
		return err
	}
	restore, restoreProcs, err := b.step(ctx, "restore (backup restore → pg_restore into an empty database)", jobs.RestoreJob(target, rin), nil)
	if err != nil {
		return err
	}
	got, err := countRows(ctx, dbURL(restored))
	if err != nil {
		return fmt.Errorf("the restored database: %w", err)
	}
	if got != rows {
		return fmt.Errorf("the restored database has %d rows of messages, the source %d", got, rows)
	}
	b.record(row{what: "PostgreSQL", size: dbSize, artifact: m.Size, step: "restore: `backup restore` (pg_restore into an empty database)", wall: restore, procs: restoreProcs})
	if err := b.repo.Delete(ctx, ref); err != nil {
		return err
	}
	return nil
}

// fill makes the tables and inserts rows until the database's size (pg_database_size: tables, TOAST and
// indexes) reaches size. A message row is an id, a time, an account and 256 characters of hex from eight
// md5s of random(): data zlib cannot shrink much below half (hex is 4 bits per byte), so the dump's
// compression does not make the figures trivial.
func fill(ctx context.Context, dbURL string, size int64) (dbSize, rows int64, err error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	for _, q := range []string{
		`CREATE TABLE accounts (id bigint PRIMARY KEY, name text NOT NULL UNIQUE, created timestamptz NOT NULL)`,
		`INSERT INTO accounts SELECT g, 'account' || g, now() - g * interval '1 minute' FROM generate_series(1, 10000) g`,
		`CREATE TABLE messages (id bigint PRIMARY KEY, at timestamptz NOT NULL, account bigint NOT NULL, body text NOT NULL)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return 0, 0, err
		}
	}
	const insert = `INSERT INTO messages SELECT g, now() - g * interval '1 second', 1 + g % 10000,
		md5(random()::text) || md5(random()::text) || md5(random()::text) || md5(random()::text) ||
		md5(random()::text) || md5(random()::text) || md5(random()::text) || md5(random()::text)
		FROM generate_series($1::bigint, $2::bigint) g`
	for {
		if err := conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&dbSize); err != nil {
			return 0, 0, err
		}
		if dbSize >= size {
			break
		}
		// The last batch is cut to what is missing (a row takes about 340 bytes with its index entry).
		n := min(int64(fillBatch), max(1000, (size-dbSize)/340))
		if _, err := conn.Exec(ctx, insert, rows+1, rows+n); err != nil {
			return 0, 0, err
		}
		rows += n
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		return 0, 0, err
	}
	err = conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&dbSize)
	return dbSize, rows, err
}

func countRows(ctx context.Context, dbURL string) (int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var n int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&n)
	return n, err
}
