package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/postgres"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
)

// The PostgreSQL workload: PostgresDatabases on one PostgresConnection to a real PostgreSQL server, which
// the workload starts on first use and stops when the harness closes it. Each database is a role, a
// database on the server and a Secret in the cluster.

func init() { register(&postgresWorkload{}) }

// postgresWorkload holds the server for all the runs of a bench.
type postgresWorkload struct {
	mu     sync.Mutex
	server *postgrestest.Server
	// operator is a pool logged in as the connection's login: the floor's sessions, which make what the
	// operator's would. admin is the superuser's: the bench's own sessions, left out of the counters.
	operator, admin *sessions
	// offset is how far the log was counted; totals are the counts so far.
	offset int64
	totals postgrestest.Activity
	// budget, when not 0, is the sessions of the floor's pool and of the connection's spec.maxSessions in
	// place of -postgres-sessions: the session points' runs set it (setBudget).
	budget int
}

// The PostgresConnection, its Secret, and the login in it: CREATEROLE and CREATEDB, no superuser, as
// docs/homelab.md recommends (so the operator also grants itself each role).
const (
	pgConnection = "db"
	pgSecret     = "db-admin"
	pgLogin      = "platform_operator"
	// pgMaxObjects bounds the databases one run makes: each is a copy of template1, 7.5 MB on disk.
	pgMaxObjects = 1000
	// pgEditInterval is the least time between two rotations of one database.
	pgEditInterval = 2 * time.Second
)

var pgLoginPassword = "bench-" + pgLogin

// pgBudget is the sessions the floor and the operator each have on the server: the floor's pool of the
// connection's login, and the PostgresConnection's spec.maxSessions. The operator's workers
// (--max-concurrent-reconciles, 8) must not be the lower bound.
var pgBudget = flag.Int("postgres-sessions", postgres.DefaultPoolSize,
	"PostgresDatabase: sessions of the connection's login on the server, for the floor and the operator (its PostgresConnection's spec.maxSessions).")

func (*postgresWorkload) Info() Info {
	return Info{
		Name: "postgres", Kind: "PostgresDatabase", Resource: "postgresdatabases",
		Noun: "database", Nouns: "databases",
		Controllers:  []string{"postgresdatabase"},
		Children:     []string{"Secret"},
		StatusWrites: 1,
		MaxObjects:   pgMaxObjects,
		Shape: fmt.Sprintf("A database is the sample's PostgresDatabase on one PostgresConnection to a real PostgreSQL "+
			"server (the machine's, started once by the bench on 127.0.0.1 with `fsync=off`, `log_statement=all`, "+
			"`log_connections=on`); the connection's login has CREATEROLE and CREATEDB, no superuser. Each database is a "+
			"role (its password a SCRAM verifier), the operator's membership in it, the database (a copy of template1), "+
			"PUBLIC's privileges revoked, two owner comments, and one child in the cluster, the Secret with the "+
			"credentials. The connection, its Secret and a Ready connection exist before the clock starts; every run "+
			"drops what an earlier run made of its databases before it starts. The floor runs the same writing "+
			"statements as the operator's login (its SCRAM verifier computed per database, as the operator does) "+
			"through a pool of %[1]d sessions (no catalog reads, no login per database); the operator has the same "+
			"budget, the connection's `spec.maxSessions: %[1]d` (`-postgres-sessions`; the last table below measures "+
			"other budgets). A run makes at most %[2]d "+
			"databases (%[2]d × 7.5 MB of disk): larger sizes are measured at %[2]d.",
			*pgBudget, pgMaxObjects),
		// A rotation costs two logins and an ALTER ROLE: at N = 3 and 10 edits/s a database would be edited
		// again before its last rotation is done.
		EditInterval: pgEditInterval,
		EditDoes: fmt.Sprintf("the `homelab.mortenolsen.pro/rotate-password` annotation of one database after another is "+
			"merge-patched (a rotation: the documented way to ask for a new password), one database at most every %s "+
			"(at small N, fewer edits per second than the rate below)", pgEditInterval),
		EditWritten: "Secret rewritten",
		EditStages: "*Secret rewritten* is the Secret carrying the rotation's value in its `password-rotation` annotation, " +
			"which the operator writes only after `ALTER ROLE ... PASSWORD` has set the new password on the server: " +
			"*applied* is the same moment, both seen through a watch.",
		CountersDo: "What the PostgreSQL server did for the operator, from its log (`log_statement=all`, `log_connections=on`; " +
			"the bench's own superuser sessions left out), per database, from the first create until the operator is idle: " +
			"*logins* are sessions opened (the operator opens one per reconcile that reaches the server), *SQL statements* " +
			"every statement (catalog reads, `BEGIN` and `COMMIT` included), *writing SQL statements* those that change the " +
			"server (`CREATE`, `ALTER`, `GRANT`, `REVOKE`, `COMMENT`, `DROP`...). The same counts over the restart's resync " +
			"are in the steady-state table, per reconcile.",
	}
}

func (w *postgresWorkload) Kinds() []client.Object {
	db := w.database(benchNamespace, 0)
	return []client.Object{db, w.connection(benchNamespace), postgres.Secret(db, homelabv1.GroupVersion.WithKind("PostgresDatabase"), postgres.Settings{}, "x", "x", "")}
}

func (*postgresWorkload) ObjectName(i int) string { return fmt.Sprintf("db-%05d", i) }

func (w *postgresWorkload) database(namespace string, i int) *homelabv1.PostgresDatabase {
	return &homelabv1.PostgresDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: w.ObjectName(i)},
		Spec:       homelabv1.PostgresDatabaseSpec{Connection: pgConnection, ReclaimPolicy: homelabv1.DatabaseReclaimDelete},
	}
}

// sessions is the budget of the runs under way: -postgres-sessions, or the session point's.
func (w *postgresWorkload) sessions() int {
	if w.budget > 0 {
		return w.budget
	}
	return *pgBudget
}

// setBudget makes s (0: -postgres-sessions) the budget of the next runs: the floor's pool is replaced by
// one of s sessions and the next connection created has spec.maxSessions s. Call it between runs only.
func (w *postgresWorkload) setBudget(s int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.budget = s
	if w.server != nil {
		w.operator.close()
		w.operator = newSessions(w.server.ConnString(pgLogin, pgLoginPassword, "postgres"), w.sessions())
	}
}

func (w *postgresWorkload) connection(namespace string) *homelabv1.PostgresConnection {
	budget := int32(w.sessions())
	return &homelabv1.PostgresConnection{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pgConnection},
		Spec:       homelabv1.PostgresConnectionSpec{Secret: pgSecret, MaxSessions: &budget},
	}
}

// start starts the server, its login and the bench's pools, once.
func (w *postgresWorkload) start(ctx context.Context) (*postgrestest.Server, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.server != nil {
		return w.server, nil
	}
	s, err := postgrestest.Start(ctx)
	if err != nil {
		return nil, err
	}
	err = s.LogConnections(ctx)
	if err == nil {
		err = s.CreateRole(ctx, pgLogin, pgLoginPassword, "CREATEROLE CREATEDB")
	}
	if err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	w.server = s
	w.operator = newSessions(s.ConnString(pgLogin, pgLoginPassword, "postgres"), w.sessions())
	w.admin = newSessions(s.ConnString(s.User, s.Password, "postgres"), pgAdminSessions)
	w.offset, w.totals = s.LogSize(), postgrestest.Activity{}
	return s, nil
}

// sessions are a bounded number of sessions of one login, opened when first needed and kept.
type sessions struct {
	conn  string
	slots chan struct{} // one per session in use
	mu    sync.Mutex
	idle  []*pgx.Conn
}

// pgAdminSessions is how many superuser sessions the bench's own preparation opens at most.
const pgAdminSessions = 32

func newSessions(conn string, n int) *sessions {
	return &sessions{conn: conn, slots: make(chan struct{}, max(n, 1))}
}

// do runs f on a session of its own, opening one when none is idle.
func (p *sessions) do(ctx context.Context, f func(*pgx.Conn) error) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.slots }()
	p.mu.Lock()
	var c *pgx.Conn
	if n := len(p.idle); n > 0 {
		c, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if c == nil {
		var err error
		if c, err = pgx.Connect(ctx, p.conn); err != nil {
			return err
		}
	}
	err := f(c)
	if err != nil && c.IsClosed() {
		return err
	}
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
	return err
}

// exec runs statements in order on one session.
func (p *sessions) exec(ctx context.Context, statements ...string) error {
	return p.do(ctx, func(c *pgx.Conn) error {
		for _, q := range statements {
			if _, err := c.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}

// close ends the idle sessions: the sessions in use are done by then.
func (p *sessions) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.idle {
		_ = c.Close(context.Background())
	}
	p.idle = nil
}

// Close stops the server; the next run starts another.
func (w *postgresWorkload) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.server == nil {
		return nil
	}
	w.operator.close()
	w.admin.close()
	err := w.server.Stop()
	w.server, w.operator, w.admin = nil, nil, nil
	return err
}

// Counters are the logins and statements of every session but the bench's superuser's, counted from the
// server's log.
func (w *postgresWorkload) Counters() (map[string]float64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.server == nil {
		return nil, nil
	}
	a, next, err := w.server.Activity(w.offset, postgrestest.Superuser)
	if err != nil {
		return nil, err
	}
	w.offset = next
	w.totals.Logins += a.Logins
	w.totals.Statements += a.Statements
	w.totals.Writes += a.Writes
	return map[string]float64{
		"logins":                 float64(w.totals.Logins),
		"SQL statements":         float64(w.totals.Statements),
		"writing SQL statements": float64(w.totals.Writes),
	}, nil
}

// Prepare drops what an earlier run made of database i on the server; with the first database, it
// creates the connection and its Secret.
func (w *postgresWorkload) Prepare(ctx context.Context, c client.Client, namespace string, i int) error {
	s, err := w.start(ctx)
	if err != nil {
		return err
	}
	name := postgres.Name(namespace, w.ObjectName(i))
	if err := w.admin.exec(ctx, postgres.DropDatabase(name), postgres.DropRole(name)); err != nil {
		return fmt.Errorf("drop what an earlier run made: %w", err)
	}
	if i != 0 {
		return nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pgSecret},
		Data:       s.SecretData(pgLogin, pgLoginPassword),
	}
	if err := c.Create(ctx, secret); err != nil {
		return err
	}
	return c.Create(ctx, w.connection(namespace))
}

func (w *postgresWorkload) Create(ctx context.Context, c client.Client, namespace string, i int) error {
	return c.Create(ctx, w.database(namespace, i))
}

// Floor creates database i with the operator's finalizer, runs the writing statements the operator's
// login runs for a new database (the role and its comment in one transaction, the membership, the
// database, its comment, PUBLIC's privileges revoked), creates the Secret and writes the status.
func (w *postgresWorkload) Floor(ctx context.Context, c client.Client, namespace string, i int) error {
	s, err := w.start(ctx)
	if err != nil {
		return err
	}
	db := w.database(namespace, i)
	db.Finalizers = []string{homelabv1.PostgresDatabaseFinalizer}
	if err := c.Create(ctx, db); err != nil {
		return err
	}
	name := postgres.Name(namespace, db.Name)
	password, err := postgres.NewPassword()
	if err != nil {
		return err
	}
	verifier, err := postgres.NewScramVerifier(password)
	if err != nil {
		return err
	}
	comment := postgres.Owner{Kind: "PostgresDatabase", Namespace: db.Namespace, Name: db.Name, UID: string(db.UID)}.Comment()
	if err := w.operator.do(ctx, func(conn *pgx.Conn) error {
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, q := range []string{postgres.CreateRole(name, verifier), postgres.CommentOnRole(name, comment)} {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("role %s: %w", name, err)
		}
		// The floor sends what the operator sends: the database made closed, then opened (postgres.NewDatabase).
		for _, q := range append([]string{postgres.GrantRoleToCurrentUser(name)}, postgres.NewDatabase(name, name, comment)...) {
			if _, err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("database %s: %w", name, err)
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	settings, err := postgres.SettingsFromSecret(s.SecretData(pgLogin, pgLoginPassword))
	if err != nil {
		return err
	}
	secret := postgres.Secret(db, homelabv1.GroupVersion.WithKind("PostgresDatabase"), settings, name, password, "")
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("floor: create Secret %s: %w", secret.Name, err)
	}
	now := metav1.Now()
	var conds []metav1.Condition
	for _, t := range []string{homelabv1.ConditionConnection, homelabv1.ConditionDatabase, homelabv1.ConditionCredentials, homelabv1.ConditionReady} {
		conds = append(conds, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: homelabv1.ReasonReady,
			Message: "floor", LastTransitionTime: now, ObservedGeneration: db.Generation})
	}
	db.Status = homelabv1.PostgresDatabaseStatus{ObservedGeneration: db.Generation, Conditions: conds,
		DatabaseName: name, SecretName: secret.Name}
	return c.Status().Update(ctx, db)
}

// rotationMarker is the rotation edit seq asks for: the Secret that answers it carries it.
func rotationMarker(seq int) string { return fmt.Sprintf("churn-%06d", seq) }

// Edit asks for a new password, as `kubectl annotate --overwrite` would.
func (w *postgresWorkload) Edit(ctx context.Context, c client.Client, namespace string, i, seq int) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, homelabv1.AnnotationRotatePassword, rotationMarker(seq))
	obj := &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: w.ObjectName(i)}}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

func (*postgresWorkload) NewObserver() Observer {
	return &postgresObserver{dbs: map[string]*postgresState{}}
}

// postgresObserver follows PostgresDatabases through a watch of them and of the operator's Secrets.
type postgresObserver struct {
	dbs map[string]*postgresState
}

type postgresState struct {
	secret               bool // the database's Secret seen
	generation, observed int64
	ready                bool   // Ready True in the status
	rotation             string // the rotation the Secret answers
	marker               string // the rotation the edit under way asks for
}

func (o *postgresObserver) Watches() []Watch {
	return []Watch{
		{Object: &homelabv1.PostgresDatabase{}},
		{Object: &corev1.Secret{}, Selector: oplabels.ManagedSelector()},
	}
}

func (o *postgresObserver) Observe(obj client.Object) Progress {
	var s *postgresState
	name := obj.GetName()
	switch obj := obj.(type) {
	case *homelabv1.PostgresDatabase:
		s = entry(o.dbs, name)
		s.generation, s.observed = obj.Generation, obj.Status.ObservedGeneration
		s.ready = meta.IsStatusConditionTrue(obj.Status.Conditions, homelabv1.ConditionReady)
	case *corev1.Secret:
		if obj.Labels[oplabels.NameLabel] != postgres.AppName || obj.Labels[oplabels.InstanceLabel] == "" {
			return Progress{}
		}
		name = obj.Labels[oplabels.InstanceLabel]
		s = entry(o.dbs, name)
		s.secret = true
		s.rotation = obj.Annotations[postgres.AnnotationRotation]
	default:
		return Progress{}
	}
	written := s.marker != "" && s.rotation == s.marker
	return Progress{
		Name:      name,
		Converged: s.secret && s.ready && s.generation > 0 && s.observed == s.generation,
		Written:   written,
		Applied:   written,
	}
}

func (o *postgresObserver) StartEdit(name string, seq int) {
	entry(o.dbs, name).marker = rotationMarker(seq)
}
