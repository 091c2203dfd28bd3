package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/jobrun"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

// The backup scenario (docs/backup.md): the demo starts a real S3 server (versitygw, bin/versitygw-*) on
// 127.0.0.1 and a real PostgreSQL server; a BackupStore on the S3 server and a PostgresDatabase are
// applied; the demo writes rows into the database, asks for a Backup of it, then makes a new
// PostgresDatabase restored from that Backup and reads the rows back from it. The local cluster has no
// kubelet and no Job controller: the demo runs each Job's container on this machine, with the operator's
// own binary and this machine's pg_dump and pg_restore (internal/testutil/jobrun, as the tests do), and
// then writes the Job's status as the Job controller would, saying so in its output.
func init() {
	register(Scenario{
		Name:     "backup",
		Title:    "Backups to a real S3 server and a restore into a new PostgresDatabase (backup.josie.cloud/v1alpha1)",
		Operator: startBackupS3,
		Objects:  backupObjects,
		Follow:   backupv1.GroupVersion.WithKind("BackupStore"),
		Steps:    backupSteps,
		Show:     backupShow,
		Kubectl: func(client.Object) []string {
			return []string{
				"get backupstores,backups,backupschedules -o wide",
				"get postgresdatabases " + backupSourceDB + " " + backupRestoredDB + " -o wide",
				"describe backup " + backupName,
			}
		},
	})
}

// The names of what the scenario makes in the demo's namespace.
const (
	backupStoreName      = "demo-s3"
	backupCredentials    = "demo-s3-credentials"
	backupBucket         = "demo-backups"
	backupConnection     = "backup-demo"
	backupConnectionSecr = "backup-demo-admin"
	backupSourceDB       = "shop"
	backupRestoredDB     = "shop-restored"
	backupName           = "shop-now"
)

// backupScenario is what the scenario started beside the cluster and in its steps.
var backupScenario struct {
	sync.Mutex
	s3       *s3test.Server
	dir      string
	postgres demoPostgres
}

// startBackupS3 starts versitygw on 127.0.0.1 (the tests' server, internal/testutil/s3test) and makes the
// bucket the BackupStore names. The operator needs no flag for it: the BackupStore names the endpoint.
func startBackupS3(ctx context.Context, dir string) ([]string, func(), error) {
	s, err := s3test.Start(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("start versitygw (make versitygw builds it): %w", err)
	}
	stop := func() { _ = s.Stop() }
	if _, err := s.CreateBucket(ctx, backupBucket, ""); err != nil {
		stop()
		return nil, nil, fmt.Errorf("create bucket %s: %w", backupBucket, err)
	}
	backupScenario.Lock()
	backupScenario.s3, backupScenario.dir = s, dir
	backupScenario.Unlock()
	return nil, stop, nil
}

// backupObjects are the store's credentials Secret, the BackupStore, a PostgresConnection of the
// scenario's own (its Secret is written once its server runs) and the database to back up.
func backupObjects(ns string) []client.Object {
	backupScenario.Lock()
	s := backupScenario.s3
	backupScenario.Unlock()
	endpoint, keyID, secret := "http://127.0.0.1:1", "", ""
	if s != nil {
		endpoint, keyID, secret = s.Endpoint, s.AccessKeyID, s.SecretAccessKey
	}
	return []client.Object{
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupCredentials},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secret}},
		&backupv1.BackupStore{TypeMeta: metav1.TypeMeta{APIVersion: backupv1.GroupVersion.String(), Kind: "BackupStore"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupStoreName},
			Spec: backupv1.BackupStoreSpec{Endpoint: endpoint, Bucket: backupBucket, Prefix: "demo", Region: "us-east-1",
				Credentials: backupv1.BackupStoreCredentials{SecretName: backupCredentials}}},
		&homelabv1.PostgresConnection{TypeMeta: metav1.TypeMeta{APIVersion: homelabv1.GroupVersion.String(), Kind: "PostgresConnection"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupConnection},
			Spec:       homelabv1.PostgresConnectionSpec{Secret: backupConnectionSecr}},
		&homelabv1.PostgresDatabase{TypeMeta: metav1.TypeMeta{APIVersion: homelabv1.GroupVersion.String(), Kind: "PostgresDatabase"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupSourceDB},
			Spec:       homelabv1.PostgresDatabaseSpec{Connection: backupConnection, ReclaimPolicy: homelabv1.DatabaseReclaimDelete}},
	}
}

// backupSteps: the server, the store Ready, rows in the database, the Backup, the restore, and the hook
// for the ErgoNetwork restore.
func backupSteps(client.Object) []Step {
	return []Step{
		Play(playBackupPostgres),
		WaitFor("Waiting for the operator to probe BackupStore "+backupStoreName+" on the S3 server", ConditionTrue(readyCondition)),
		Play(playBackupRows),
		Play(playBackup),
		Play(playRestore),
		Play(playErgoBackup),
		Play(playErgoRestore),
	}
}

// playBackupPostgres starts the scenario's PostgreSQL server and writes its PostgresConnection's Secret.
func playBackupPostgres(ctx context.Context, e *Env, obj client.Object) error {
	backupScenario.Lock()
	s3 := backupScenario.s3
	backupScenario.Unlock()
	if s3 != nil {
		e.Step("The S3 server: versitygw (Apache-2.0), started by the demo beside the cluster")
		e.Printf("versitygw listens on %s (bucket %s; its files under %s); BackupStore %s points at it", s3.Endpoint, backupBucket,
			s3.Root, backupStoreName)
	}
	e.Step("Playing the database admin: starting a PostgreSQL server on 127.0.0.1 and writing Secret %s for PostgresConnection %s",
		backupConnectionSecr, backupConnection)
	return playDatabaseAdmin(ctx, e, &backupScenario.postgres, obj.GetNamespace(), backupConnectionSecr, "backup_demo_operator",
		"demo-backup-operator-password")
}

// playBackupRows waits for the database to be Ready and writes rows into it as its own role.
func playBackupRows(ctx context.Context, e *Env, obj client.Object) error {
	e.Step("Waiting for PostgresDatabase %s to become Ready, then writing rows into it with its Secret, as an application would", backupSourceDB)
	db, err := waitDatabase(ctx, e, obj.GetNamespace(), backupSourceDB)
	if err != nil {
		return err
	}
	conn, err := connectDatabase(ctx, e, db)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, total numeric NOT NULL);
		INSERT INTO orders VALUES (1, 'ada', 12.50), (2, 'grace', 7.25), (3, 'linus', 99.99)`); err != nil {
		return fmt.Errorf("write rows into %s: %w", backupSourceDB, err)
	}
	e.Printf("CREATE TABLE orders; INSERT 3 rows")
	return printOrders(ctx, e, conn, "rows in "+backupSourceDB)
}

// playBackup makes a Backup of the database, runs its Job here and waits for it to be Completed.
func playBackup(ctx context.Context, e *Env, obj client.Object) error {
	ns := obj.GetNamespace()
	e.Step("Asking for a Backup of PostgresDatabase %s now: Backup %s, artifactPolicy Retain", backupSourceDB, backupName)
	b := &backupv1.Backup{TypeMeta: metav1.TypeMeta{APIVersion: backupv1.GroupVersion.String(), Kind: "Backup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupName},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: backupSourceDB},
			Store: backupStoreName, ArtifactPolicy: backupv1.ArtifactRetain}}
	if err := e.Client.Patch(ctx, b, client.Apply, client.FieldOwner(e.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply Backup %s: %w", backupName, err)
	}
	if err := runJobHere(ctx, e, client.ObjectKey{Namespace: ns, Name: jobs.Name(b)}, "pg_dump into `platform-operator backup put`", nil); err != nil {
		return err
	}
	e.Step("Waiting for Backup %s to be Completed (the operator reads the artifact's manifest in the store)", backupName)
	state, err := e.Poll(ctx, b, func(o client.Object) (bool, string) {
		b := o.(*backupv1.Backup)
		return b.Status.Phase == backupv1.BackupCompleted || b.Status.Phase == backupv1.BackupFailed, "phase " + string(b.Status.Phase)
	})
	if err != nil {
		return err
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		return err
	}
	if b.Status.Phase != backupv1.BackupCompleted {
		return fmt.Errorf("backup %s is %s: %s", backupName, state, readyMessage(b.Status.Conditions))
	}
	printBackups(e, []backupv1.Backup{*b})
	return nil
}

// playRestore makes a new PostgresDatabase restored from the Backup, runs the restore Job here, waits for
// it to be Ready and reads the rows back with its own Secret.
func playRestore(ctx context.Context, e *Env, obj client.Object) error {
	ns := obj.GetNamespace()
	e.Step("Restoring Backup %s into a new PostgresDatabase %s (spec.restore.backup: %s)", backupName, backupRestoredDB, backupName)
	db := &homelabv1.PostgresDatabase{TypeMeta: metav1.TypeMeta{APIVersion: homelabv1.GroupVersion.String(), Kind: "PostgresDatabase"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupRestoredDB},
		Spec: homelabv1.PostgresDatabaseSpec{Connection: backupConnection, ReclaimPolicy: homelabv1.DatabaseReclaimDelete,
			Restore: &homelabv1.RestoreSource{Backup: backupName}}}
	if err := e.Client.Patch(ctx, db, client.Apply, client.FieldOwner(e.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply PostgresDatabase %s: %w", backupRestoredDB, err)
	}
	if err := runJobHere(ctx, e, client.ObjectKey{Namespace: ns, Name: jobs.RestoreName(db)}, "`platform-operator backup restore` into pg_restore", nil); err != nil {
		return err
	}
	e.Step("Waiting for PostgresDatabase %s to become Ready (Restored, then its Secret)", backupRestoredDB)
	restored, err := waitDatabase(ctx, e, ns, backupRestoredDB)
	if err != nil {
		return err
	}
	if f := restored.Status.RestoredFrom; f != nil {
		e.Printf("status.restoredFrom: backup %s, store %s, source %s, id %s", f.Backup, f.Store, f.SourceName, f.ID)
	}
	conn, err := connectDatabase(ctx, e, restored)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	return printOrders(ctx, e, conn, "rows read back from "+backupRestoredDB+", as its own role")
}

// runJobHere waits for the Job the operator makes, runs its container on this machine (jobrun: the
// operator's binary for the image's, this machine's PostgreSQL tools on the PATH) and marks the Job
// succeeded or failed as the Job controller would (testutil.FinishJob).
func runJobHere(ctx context.Context, e *Env, key client.ObjectKey, what string, volumes map[string]string) error {
	e.Step("Waiting for the operator's Job %s, then running its container on this machine", key.Name)
	if err := waitForJob(ctx, e, key); err != nil {
		return err
	}
	job := &batchv1.Job{}
	if err := e.Client.Get(ctx, key, job); err != nil {
		return err
	}
	c := job.Spec.Template.Spec.Containers[0]
	e.Printf("Job %s: image %s, %s", key.Name, c.Image, what)
	e.Printf("(this cluster has no kubelet and no Job controller: the Job ran LOCALLY, the demo runs the container's command on this "+
		"machine with the operator's binary %s in place of the image's and this machine's tools (pg_dump, pg_restore) on the PATH, "+
		"then writes the Job's status as the Job controller would)", rel(e.Root, e.OperatorBinary))
	pgBin, err := postgrestest.BinDir()
	if err != nil {
		return err
	}
	backupScenario.Lock()
	base := backupScenario.dir
	backupScenario.Unlock()
	dir, err := os.MkdirTemp(base, "job-")
	if err != nil {
		return err
	}
	local := jobrun.Local{Reader: e.Client, Binary: e.OperatorBinary, Path: pgBin + ":/usr/bin:/bin", Dir: dir,
		Commands: map[string]string{jobs.OperatorCommand: e.OperatorBinary}, Volumes: volumes}
	t := time.Now()
	r, err := local.Run(ctx, job)
	if err != nil {
		return fmt.Errorf("run Job %s here: %w", key.Name, err)
	}
	succeeded := r.ExitCode == 0
	e.Printf("ran here in %s, exit status %d", secs(time.Since(t)), r.ExitCode)
	if !succeeded {
		e.Text(r.Output)
	}
	if err := testutil.FinishJob(ctx, e.Client, job, succeeded, batchv1.JobReasonBackoffLimitExceeded, ""); err != nil {
		return fmt.Errorf("write Job %s's status: %w", key.Name, err)
	}
	e.Printf("Job %s: status written by the demo (%s)", key.Name, map[bool]string{true: "Complete", false: "Failed"}[succeeded])
	if !succeeded {
		return fmt.Errorf("the Job %s failed here (exit status %d)", key.Name, r.ExitCode)
	}
	return nil
}

// waitForJob waits until the operator made Job key.
func waitForJob(ctx context.Context, e *Env, key client.ObjectKey) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, e.Timeout, true, func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, key, &batchv1.Job{})
		if apierrors.IsNotFound(err) {
			if e.operator != nil {
				return false, e.errOperatorExited()
			}
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("wait for Job %s: %w", key.Name, err)
	}
	return nil
}

// waitDatabase waits for PostgresDatabase ns/name to be Ready and returns it.
func waitDatabase(ctx context.Context, e *Env, ns, name string) (*homelabv1.PostgresDatabase, error) {
	db := &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	t := time.Now()
	state, err := e.Poll(ctx, db, ConditionTrue(readyCondition))
	if err != nil {
		return nil, err
	}
	e.Printf("PostgresDatabase %s: %s after %s", name, state, secs(time.Since(t)))
	return db, e.Client.Get(ctx, client.ObjectKeyFromObject(db), db)
}

// connectDatabase logs in with the database's Secret (its url key).
func connectDatabase(ctx context.Context, e *Env, db *homelabv1.PostgresDatabase) (*pgx.Conn, error) {
	secret := &corev1.Secret{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.Status.SecretName}, secret); err != nil {
		return nil, fmt.Errorf("read Secret %s: %w", db.Status.SecretName, err)
	}
	conn, err := pgx.Connect(ctx, string(secret.Data["url"]))
	if err != nil {
		return nil, fmt.Errorf("log in to %s with Secret %s: %w", db.Name, db.Status.SecretName, err)
	}
	e.Printf("logged in to database %s as %s (Secret %s)", secret.Data["database"], secret.Data["user"], db.Status.SecretName)
	return conn, nil
}

// printOrders prints the orders table.
func printOrders(ctx context.Context, e *Env, conn *pgx.Conn, title string) error {
	rows, err := conn.Query(ctx, "SELECT id, customer, total::text FROM orders ORDER BY id")
	if err != nil {
		return fmt.Errorf("read orders: %w", err)
	}
	defer rows.Close()
	var table [][]string
	for rows.Next() {
		var id int
		var customer, total string
		if err := rows.Scan(&id, &customer, &total); err != nil {
			return err
		}
		table = append(table, []string{strconv.Itoa(id), customer, total})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	e.Printf("%s (SELECT * FROM orders):", title)
	e.Table([]string{"ID", "CUSTOMER", "TOTAL"}, table)
	return nil
}

// printBackups prints Backups like kubectl get backups -o wide.
func printBackups(e *Env, list []backupv1.Backup) {
	var rows [][]string
	for _, b := range list {
		completed := ""
		if b.Status.CompletionTime != nil {
			completed = b.Status.CompletionTime.UTC().Format(time.RFC3339)
		}
		rows = append(rows, []string{b.Name, string(b.Spec.Source.Kind), b.Spec.Source.Name, string(b.Status.Phase),
			strconv.FormatInt(b.Status.Size, 10), b.Status.SHA256, completed, b.Status.Location})
	}
	e.Table([]string{"NAME", "KIND", "SOURCE", "PHASE", "SIZE", "SHA256", "COMPLETED", "LOCATION"}, rows)
}

// readyMessage is the Ready condition's reason and message ("" without one).
func readyMessage(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, readyCondition); c != nil {
		return c.Reason + ": " + c.Message
	}
	return ""
}

// backupShow prints the store, the Backups of the namespace and the events of the Backup.
func backupShow(ctx context.Context, e *Env, obj client.Object) {
	store := obj.(*backupv1.BackupStore)
	e.Step("BackupStores (like kubectl get backupstores -n %s)", store.Namespace)
	e.Table([]string{"NAME", "ENDPOINT", "BUCKET", "PREFIX", "READY", "AGE"}, [][]string{{store.Name, store.Spec.Endpoint,
		store.Spec.Bucket, store.Spec.Prefix, readyStatus(store.Status.Conditions), Age(store.CreationTimestamp.Time)}})
	e.Conditions("BackupStore", store, store.Status.Conditions)
	var list backupv1.BackupList
	if err := e.Client.List(ctx, &list, client.InNamespace(store.Namespace)); err != nil {
		e.Printf("(cannot list Backups: %v)", err)
		return
	}
	e.Step("Backups (like kubectl get backups -n %s -o wide)", store.Namespace)
	printBackups(e, list.Items)
	b := &backupv1.Backup{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: store.Namespace, Name: backupName}, b); err == nil {
		e.Conditions("Backup", b, b.Status.Conditions)
		e.Events(ctx, e.Client, "Backup", b)
	}
}
