package homelab

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/homelabtest"
	"github.com/platform-operator/platform-operator/internal/postgres"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
)

// newDatabase creates a PostgresDatabase on connection (a "name" or "namespace/name" reference).
func newDatabase(ns, name, connection string, edit ...func(*homelabv1.PostgresDatabase)) *homelabv1.PostgresDatabase {
	db := homelabtest.PostgresDatabase(ns, name, connection)
	for _, e := range edit {
		e(db)
	}
	ExpectWithOffset(1, k8s.Create(context.Background(), db)).To(Succeed())
	return db
}

// readyDatabase waits until db is Ready and returns it as the API server holds it.
func readyDatabase(db *homelabv1.PostgresDatabase) *homelabv1.PostgresDatabase {
	expectCondition(db, homelabv1.ConditionReady, metav1.ConditionTrue, homelabv1.ReasonReady)
	return db
}

// secretOf reads db's Secret.
func secretOf(db *homelabv1.PostgresDatabase) *corev1.Secret {
	s := &corev1.Secret{}
	ExpectWithOffset(1, k8s.Get(context.Background(), types.NamespacedName{Namespace: db.Namespace, Name: db.Name + "-postgres"}, s)).To(Succeed())
	return s
}

// loginWith connects with a database Secret's keys (through its url, as an application would) and
// returns current_user and current_database(), or the error.
func loginWith(data map[string][]byte) (string, string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, string(data["url"]))
	if err != nil {
		return "", "", err
	}
	defer func() { _ = conn.Close(ctx) }()
	var user, db string
	err = conn.QueryRow(ctx, "SELECT current_user, current_database()").Scan(&user, &db)
	return user, db, err
}

// serverHas says whether the server holds a role and a database named name.
func serverHas(name string) (role, database bool) {
	ctx := context.Background()
	conn, err := pg.Connect(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	Expect(conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1), EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&role, &database)).To(Succeed())
	return role, database
}

// superuserExec runs a statement as the server's superuser.
func superuserExec(sql string) {
	ctx := context.Background()
	conn, err := pg.Connect(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, sql)
	Expect(err).NotTo(HaveOccurred())
}

// statementsBy are the statements user sent since offset.
func statementsBy(user string, offset int64) []postgrestest.Statement {
	all, err := pg.Statements(offset)
	Expect(err).NotTo(HaveOccurred())
	var out []postgrestest.Statement
	for _, st := range all {
		if st.User == user {
			out = append(out, st)
		}
	}
	return out
}

// sqlBy polls the SQL user ran since offset, for Eventually.
func sqlBy(user string, offset int64) func() []string {
	return func() []string {
		var sql []string
		for _, st := range statementsBy(user, offset) {
			sql = append(sql, st.SQL)
		}
		return sql
	}
}

func expectGone(obj client.Object) {
	EventuallyWithOffset(1, func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	}).Should(BeTrue())
}

var _ = Describe("PostgresDatabase", func() {
	ctx := context.Background()

	It("makes a role and a database only that role reaches, and a Secret that logs in; an unchanged database costs no write", func() {
		ns := newNamespace("pgdb")
		_, operator := readyConnection(ns, "main")
		db := readyDatabase(newDatabase(ns, "wiki", "main"))
		name := postgres.Name(ns, "wiki")
		Expect(db.Status.DatabaseName).To(Equal(name))
		Expect(db.Status.SecretName).To(Equal("wiki-postgres"))
		Expect(db.Finalizers).To(ContainElement(homelabv1.PostgresDatabaseFinalizer))

		secret := secretOf(db)
		Expect(secret.Data).To(HaveKey("host"))
		for _, k := range []string{"host", "port", "user", "password", "database", "url"} {
			Expect(secret.Data).To(HaveKey(k))
		}
		Expect(string(secret.Data["user"])).To(Equal(name))
		Expect(string(secret.Data["database"])).To(Equal(name))
		Expect(secret.OwnerReferences).To(HaveLen(1))
		Expect(secret.OwnerReferences[0].UID).To(Equal(db.UID))
		user, database, err := loginWith(secret.Data)
		Expect(err).NotTo(HaveOccurred())
		Expect([]string{user, database}).To(Equal([]string{name, name}))

		// A second database's role reaches neither this database, nor this role the other's.
		other := readyDatabase(newDatabase(ns, "blog", "main"))
		otherData := secretOf(other).Data
		crossed := postgres.Settings{Host: pg.Host, Port: pg.Port, User: string(otherData["user"]), Password: string(otherData["password"]), SSLMode: "disable", Database: name}
		Expect(postgres.CheckLogin(ctx, crossed)).To(HaveOccurred())
		crossed = postgres.Settings{Host: pg.Host, Port: pg.Port, User: name, Password: string(secret.Data["password"]), SSLMode: "disable", Database: string(otherData["database"])}
		Expect(postgres.CheckLogin(ctx, crossed)).To(HaveOccurred())

		// An unchanged reconcile, asked for by an annotation the operator ignores, reads the server and
		// writes nothing to it or to the API server.
		before, offset := writes.In(ns), pg.LogSize()
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		db.Annotations = map[string]string{"example.com/touch": "1"}
		Expect(k8s.Update(ctx, db)).To(Succeed())
		Eventually(sqlBy(operator, offset)).Should(ContainElement(ContainSubstring("pg_get_userbyid(datdba)")), "the reconcile did not read the server")
		Consistently(func() []string { return writes.Since(ns, before) }).Should(BeEmpty())
		for _, st := range statementsBy(operator, offset) {
			Expect(st.IsWrite()).To(BeFalse(), "an unchanged reconcile sent %q", st.SQL)
		}
		Expect(secretOf(db).ResourceVersion).To(Equal(secret.ResourceVersion))

		// The password never reached the server's log.
		log, err := pg.ReadLog()
		Expect(err).NotTo(HaveOccurred())
		Expect(log).NotTo(ContainSubstring(string(secret.Data["password"])))
		Expect(log).NotTo(ContainSubstring(string(otherData["password"])))
	})

	It("gives a-b/c and a/b-c different databases", func() {
		a := newNamespace("pgdb")
		ab := a + "-b"
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ab}})).To(Succeed())
		readyConnection(a, "main")
		conn := &homelabv1.PostgresConnection{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: a, Name: "main"}, conn)).To(Succeed())
		conn.Spec.AllowedNamespaces = []string{ab}
		Expect(k8s.Update(ctx, conn)).To(Succeed())
		first := readyDatabase(newDatabase(ab, "c", a+"/main"))
		second := readyDatabase(newDatabase(a, "b-c", "main"))
		Expect(first.Status.DatabaseName).NotTo(Equal(second.Status.DatabaseName))
		// The sanitized parts are the same; only the hash suffix ("_" and 10 hex digits) tells them apart.
		base := func(n string) string { return n[:len(n)-11] }
		Expect(base(first.Status.DatabaseName)).To(Equal(base(second.Status.DatabaseName)))
		for _, db := range []*homelabv1.PostgresDatabase{first, second} {
			user, database, err := loginWith(secretOf(db).Data)
			Expect(err).NotTo(HaveOccurred())
			Expect([]string{user, database}).To(Equal([]string{db.Status.DatabaseName, db.Status.DatabaseName}))
		}
	})

	It("refuses a second PostgresDatabase claiming the same database", func() {
		ns := newNamespace("pgdb")
		readyConnection(ns, "main")
		fixed := func(d *homelabv1.PostgresDatabase) {
			d.Spec.DatabaseName = "shared_" + strings.ReplaceAll(ns, "-", "_")
		}
		first := readyDatabase(newDatabase(ns, "first", "main", fixed))
		firstPassword := secretOf(first).Data["password"]
		second := newDatabase(ns, "second", "main", fixed)
		cond := expectCondition(second, homelabv1.ConditionDatabase, metav1.ConditionFalse, homelabv1.ReasonDatabaseClaimed)
		Expect(cond.Message).To(ContainSubstring(ns + "/first"))
		expectCondition(second, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonDatabaseClaimed)
		Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "second-postgres"}, &corev1.Secret{}))).To(BeTrue())

		// Deleting the refused one drops nothing of the first's.
		Expect(k8s.Delete(ctx, second)).To(Succeed())
		expectGone(second)
		_, _, err := loginWith(secretOf(first).Data)
		Expect(err).NotTo(HaveOccurred())
		Expect(secretOf(first).Data["password"]).To(Equal(firstPassword))
	})

	It("drops the database and role on delete, and retains them with reclaimPolicy Retain for the next object of the name", func() {
		ns := newNamespace("pgdb")
		readyConnection(ns, "main")
		gone := readyDatabase(newDatabase(ns, "gone", "main"))
		kept := readyDatabase(newDatabase(ns, "kept", "main", func(d *homelabv1.PostgresDatabase) {
			d.Spec.ReclaimPolicy = homelabv1.DatabaseReclaimRetain
		}))
		keptSecret := secretOf(kept)

		Expect(k8s.Delete(ctx, gone)).To(Succeed())
		Expect(k8s.Delete(ctx, kept)).To(Succeed())
		expectGone(gone)
		expectGone(kept)
		// envtest runs no garbage collector: do its part, deleting the Secrets the owners took with them.
		for _, name := range []string{"gone-postgres", "kept-postgres"} {
			Expect(k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		}
		role, database := serverHas(gone.Status.DatabaseName)
		Expect([]bool{role, database}).To(Equal([]bool{false, false}), "Delete left the role or the database")
		role, database = serverHas(kept.Status.DatabaseName)
		Expect([]bool{role, database}).To(Equal([]bool{true, true}), "Retain dropped the role or the database")

		// The retained database is taken up by a new object of the same name, with a new password.
		again := readyDatabase(newDatabase(ns, "kept", "main"))
		Expect(again.Status.DatabaseName).To(Equal(kept.Status.DatabaseName))
		data := secretOf(again).Data
		Expect(data["password"]).NotTo(Equal(keptSecret.Data["password"]))
		_, _, err := loginWith(data)
		Expect(err).NotTo(HaveOccurred())
	})

	It("is not held by a database dropped by hand", func() {
		ns := newNamespace("pgdb")
		readyConnection(ns, "main")
		db := readyDatabase(newDatabase(ns, "handdrop", "main"))
		superuserExec("DROP DATABASE " + pgx.Identifier{db.Status.DatabaseName}.Sanitize() + " WITH (FORCE)")
		Expect(k8s.Delete(ctx, db)).To(Succeed())
		expectGone(db)
		role, database := serverHas(db.Status.DatabaseName)
		Expect([]bool{role, database}).To(Equal([]bool{false, false}))
	})

	It("makes a database dropped by hand again, and takes PUBLIC's privileges away again, on its next reconcile", func() {
		ns := newNamespace("pgdb")
		readyConnection(ns, "main")
		db := readyDatabase(newDatabase(ns, "drift", "main"))
		name := pgx.Identifier{db.Status.DatabaseName}.Sanitize()
		superuserExec("DROP DATABASE " + name + " WITH (FORCE)")
		_, _, err := loginWith(secretOf(db).Data)
		Expect(err).To(HaveOccurred())

		// The periodic check would find it; an annotation asks for the reconcile now.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		db.Annotations = map[string]string{"example.com/touch": "1"}
		Expect(k8s.Update(ctx, db)).To(Succeed())
		Eventually(func() error { _, _, err := loginWith(secretOf(db).Data); return err }).Should(Succeed())

		superuserExec("GRANT CONNECT ON DATABASE " + name + " TO PUBLIC")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		db.Annotations = map[string]string{"example.com/touch": "2"}
		Expect(k8s.Update(ctx, db)).To(Succeed())
		Eventually(func() bool {
			conn, err := pg.Connect(ctx)
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = conn.Close(ctx) }()
			var public bool
			Expect(conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database, unnest(datacl::text[]) AS acl WHERE datname = $1 AND acl LIKE '=%')", db.Status.DatabaseName).Scan(&public)).To(Succeed())
			return public
		}).Should(BeFalse())
	})

	It("waits for a missing connection, then for it to be Ready, and follows it", func() {
		ns := newNamespace("pgdb")
		db := newDatabase(ns, "early", "main")
		expectCondition(db, homelabv1.ConditionConnection, metav1.ConditionFalse, homelabv1.ReasonMissingDependency)
		expectCondition(db, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonMissingDependency)

		user, _ := newOperatorLogin("CREATEROLE CREATEDB")
		conn := newConnection(ns, "main", pg.SecretData(user, "wrong"))
		expectCondition(conn, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonAuthenticationFailed)
		expectCondition(db, homelabv1.ConditionConnection, metav1.ConditionFalse, homelabv1.ReasonWaitingForDependency)
		// The connection's own status change wakes the database, whose message then says why it waits.
		Eventually(func() string {
			return meta.FindStatusCondition(conditionsOf(db), homelabv1.ConditionConnection).Message
		}).Should(ContainSubstring("AuthenticationFailed"))

		// The password is fixed in the connection's Secret: the connection, then the database, follow.
		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "main-admin"}, secret)).To(Succeed())
		secret.Data["password"] = []byte(strings.Replace(user, "operator_", "operator-password-", 1))
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		readyDatabase(db)
	})

	It("uses a connection in another namespace only when the connection allows it", func() {
		shared := newNamespace("pgshared")
		conn, _ := readyConnection(shared, "main")
		ns := newNamespace("pgdb")
		db := newDatabase(ns, "app", shared+"/main")
		expectCondition(db, homelabv1.ConditionConnection, metav1.ConditionFalse, homelabv1.ReasonNotAllowed)

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(conn), conn)).To(Succeed())
		conn.Spec.AllowedNamespaces = []string{ns}
		Expect(k8s.Update(ctx, conn)).To(Succeed())
		readyDatabase(db)
	})

	It("makes a new password when the Secret is deleted or a rotation is asked for", func() {
		ns := newNamespace("pgdb")
		readyConnection(ns, "main")
		db := readyDatabase(newDatabase(ns, "rotating", "main"))
		first := secretOf(db)

		Expect(k8s.Delete(ctx, first)).To(Succeed())
		var second *corev1.Secret
		Eventually(func(g Gomega) {
			s := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "rotating-postgres"}, s)).To(Succeed())
			g.Expect(s.UID).NotTo(Equal(first.UID))
			second = s
		}).Should(Succeed())
		Expect(second.Data["password"]).NotTo(Equal(first.Data["password"]))
		Eventually(func() error { _, _, err := loginWith(second.Data); return err }).Should(Succeed())
		_, _, err := loginWith(first.Data)
		Expect(err).To(HaveOccurred(), "the old password still logs in")

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		db.Annotations = map[string]string{homelabv1.AnnotationRotatePassword: "2026-11-23"}
		Expect(k8s.Update(ctx, db)).To(Succeed())
		var third *corev1.Secret
		Eventually(func(g Gomega) {
			third = secretOf(db)
			g.Expect(third.Data["password"]).NotTo(Equal(second.Data["password"]))
		}).Should(Succeed())
		Eventually(func() error { _, _, err := loginWith(third.Data); return err }).Should(Succeed())
		_, _, err = loginWith(second.Data)
		Expect(err).To(HaveOccurred(), "the rotated-out password still logs in")

		// The same rotation value again asks for nothing.
		readyDatabase(db)
		rv := third.ResourceVersion
		Consistently(func() string { return secretOf(db).ResourceVersion }).Should(Equal(rv))
	})

	It("holds a deleted database while the server is unreachable, and lets it go with the release annotation", func() {
		ns := newNamespace("pgdb")
		conn, _ := readyConnection(ns, "main")
		db := readyDatabase(newDatabase(ns, "stranded", "main"))

		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: conn.Spec.Secret}, secret)).To(Succeed())
		secret.Data["port"] = []byte(closedPort())
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		expectCondition(conn, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonUnreachable)

		Expect(k8s.Delete(ctx, db)).To(Succeed())
		cond := expectCondition(db, homelabv1.ConditionCleanup, metav1.ConditionFalse, homelabv1.ReasonCleanupBlocked)
		Expect(cond.Message).To(ContainSubstring(homelabv1.AnnotationReleaseFinalizer))
		expectCondition(db, homelabv1.ConditionReady, metav1.ConditionFalse, homelabv1.ReasonCleanupBlocked)
		Expect(db.Status.SecretName).To(Equal("stranded-postgres"))
		Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(db), db) }).Should(Succeed())

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		db.Annotations = map[string]string{homelabv1.AnnotationReleaseFinalizer: "true"}
		Expect(k8s.Update(ctx, db)).To(Succeed())
		expectGone(db)
		role, database := serverHas(db.Status.DatabaseName)
		Expect([]bool{role, database}).To(Equal([]bool{true, true}), "the release annotation touched the server")
	})

	It("is refused at admission with a reserved or malformed database name, an unknown reclaimPolicy, and databaseName and connection cannot change", func() {
		ns := newNamespace("pgdb")
		bad := homelabtest.PostgresDatabase(ns, "bad", "main")
		bad.Spec.DatabaseName = "pg_catalog_x"
		Expect(k8s.Create(ctx, bad)).To(MatchError(ContainSubstring("databaseName cannot be")))
		bad.Spec.DatabaseName = "template1"
		Expect(k8s.Create(ctx, bad)).To(MatchError(ContainSubstring("databaseName cannot be")))
		bad.Spec.Connection = "a/b/c"
		bad.Spec.DatabaseName = ""
		Expect(k8s.Create(ctx, bad)).To(MatchError(ContainSubstring("spec.connection")))

		for _, tt := range []struct {
			edit func(*homelabv1.PostgresDatabase)
			want string
		}{
			{func(d *homelabv1.PostgresDatabase) { d.Spec.ReclaimPolicy = "Keep" }, "spec.reclaimPolicy"},
			{func(d *homelabv1.PostgresDatabase) { d.Spec.DatabaseName = "Upper" }, "spec.databaseName"},
			{func(d *homelabv1.PostgresDatabase) { d.Spec.DatabaseName = strings.Repeat("a", 64) }, "spec.databaseName"},
			{func(d *homelabv1.PostgresDatabase) { d.Name = strings.Repeat("a", 245) }, "metadata.name must be at most 244"},
		} {
			d := homelabtest.PostgresDatabase(ns, "bad", "main")
			tt.edit(d)
			Expect(k8s.Create(ctx, d)).To(MatchError(ContainSubstring(tt.want)))
		}
		badConn := homelabtest.PostgresConnection(ns, "bad", "s")
		badConn.Spec.AllowedNamespaces = []string{"Not_A_Namespace"}
		Expect(k8s.Create(ctx, badConn)).To(MatchError(ContainSubstring("spec.allowedNamespaces")))

		db := newDatabase(ns, "fixed", "main")
		// The controller writes status meanwhile: each update starts from a fresh read.
		update := func(edit func(*homelabv1.PostgresDatabase)) func() error {
			return func() error {
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
					return err
				}
				edit(db)
				return k8s.Update(ctx, db)
			}
		}
		Eventually(update(func(d *homelabv1.PostgresDatabase) { d.Spec.Connection = "other" })).
			Should(MatchError(ContainSubstring("spec.connection cannot change")))
		Eventually(update(func(d *homelabv1.PostgresDatabase) { d.Spec.DatabaseName = "late" })).
			Should(MatchError(ContainSubstring("cannot be added or removed")))
		// Its connection never existed, so nothing was made on the server and no finalizer holds it.
		Expect(db.Finalizers).To(BeEmpty())
		Expect(k8s.Delete(ctx, db)).To(Succeed())
		expectGone(db)
	})
})
