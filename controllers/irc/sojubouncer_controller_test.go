package irc

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	_ "github.com/lib/pq" // soju's PostgreSQL driver, to open the rendered db line as soju does
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
	"github.com/platform-operator/platform-operator/internal/irc/soju/sojutest"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup/lastbackuptest"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/monitoring"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/postgres"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// The SojuBouncer specs run the SojuBouncer controller in a manager of its own (its row of the group, built by
// internal/kit/manager as main.go builds Group) against the suite's API server, and one real PostgreSQL
// server for all of them, started by the first spec and stopped after the last.
var _ = Describe("SojuBouncer controller", Ordered, func() {
	var (
		ctx        context.Context
		pg         *postgrestest.Server
		sojuR      *SojuBouncerReconciler
		sojuWrites = &testutil.WriteCounter{}
		systemNS   string
		ns         string
		// listed are the namespaces --soju-database-namespaces lists (DefaultAdminNamespaces): each spec
		// takes the next as its ns, so the operator-wide admin connection serves it.
		listed []string
	)

	BeforeAll(func() {
		ctx = suiteCtx
		var err error
		pg, err = postgrestest.Start(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(pg.Stop()).To(Succeed()) })

		// The operator-wide admin connection: a login with CREATEROLE and CREATEDB, not a superuser.
		Expect(pg.CreateRole(ctx, "soju_operator", "operator-pw", "CREATEROLE CREATEDB")).To(Succeed())
		systemNS = newNamespace()
		Expect(k8s.Create(ctx, sojutest.ConnectionSecret(systemNS, "soju-db-admin", pg.Host, pg.Port, "soju_operator", "operator-pw"))).To(Succeed())

		mgrCtx, cancelMgr := context.WithCancel(suiteCtx)
		DeferCleanup(cancelMgr)
		caps, err := platform.Discover(cfg)
		Expect(err).NotTo(HaveOccurred())
		for range 16 {
			listed = append(listed, newNamespace())
		}
		sojuR = &SojuBouncerReconciler{Image: "registry.example/soju:test", MaxConcurrentReconciles: 2,
			DefaultAdminSecret:     types.NamespacedName{Namespace: systemNS, Name: "soju-db-admin"},
			DefaultAdminNamespaces: listed}
		mgr, err := manager.New(cfg, manager.Options{Options: ctrl.Options{
			Metrics:    metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			NewClient:  sojuWrites.NewClient,
		}}, caps, groupOf(sojuBouncers(sojuR)))
		Expect(err).NotTo(HaveOccurred())
		go func() {
			defer GinkgoRecover()
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
	})

	BeforeEach(func() {
		Expect(listed).NotTo(BeEmpty(), "more specs than listed namespaces: list more in BeforeAll")
		ns, listed = listed[0], listed[1:]
	})

	bouncer := func(name string) *ircv1.SojuBouncer {
		b := &ircv1.SojuBouncer{}
		ExpectWithOffset(1, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b)).To(Succeed())
		return b
	}
	eventually := func(name, condType string, status metav1.ConditionStatus, reason string) *ircv1.SojuBouncer {
		var b *ircv1.SojuBouncer
		EventuallyWithOffset(1, func(g Gomega) {
			b = &ircv1.SojuBouncer{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b)).To(Succeed())
			var c *metav1.Condition
			for i := range b.Status.Conditions {
				if b.Status.Conditions[i].Type == condType {
					c = &b.Status.Conditions[i]
				}
			}
			g.Expect(c).NotTo(BeNil(), "no %s condition in %+v", condType, b.Status.Conditions)
			g.Expect(c.Status).To(Equal(status), "%s: %s", condType, c.Message)
			g.Expect(c.Reason).To(Equal(reason), "%s: %s", condType, c.Message)
		}).Should(Succeed())
		return b
	}
	dbSecret := func(name string) *corev1.Secret {
		s := &corev1.Secret{}
		EventuallyWithOffset(1, get(ctx, s, ns, name+"-db")).Should(Succeed())
		return s
	}
	// exists says whether the server has a role and a database named name.
	exists := func(name string) (role, db bool) {
		conn, err := pg.Connect(ctx)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		defer func() { _ = conn.Close(ctx) }()
		ExpectWithOffset(1, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1), EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&role, &db)).To(Succeed())
		return role, db
	}
	// finishForegroundDeletion stands in for the garbage collector, which envtest does not run: it lets a
	// Deployment deleted in the foreground go (it has no pods to wait for here).
	finishForegroundDeletion := func(name string) {
		EventuallyWithOffset(1, func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
			g.Expect(d.DeletionTimestamp).NotTo(BeNil(), "the operator has not deleted the Deployment")
			g.Expect(d.Finalizers).To(ContainElement(metav1.FinalizerDeleteDependents), "not a foreground deletion")
			d.Finalizers = nil
			g.Expect(k8s.Update(ctx, d)).To(Succeed())
		}).Should(Succeed())
	}
	gone := func(name string) {
		EventuallyWithOffset(1, func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ircv1.SojuBouncer{}))
		}).Should(BeTrue())
	}

	It("makes the database, the role's Secret, config and Deployment, becomes Ready and then writes nothing", func() {
		Expect(k8s.Create(ctx, sojutest.AdminUserSecret(ns, "alpha-admin", "admin-pw-1"))).To(Succeed())
		Expect(k8s.Create(ctx, sojutest.PlainBouncer(ns, "alpha", ""))).To(Succeed())
		name := postgres.Name(ns, "alpha")

		secret := dbSecret("alpha")
		password := string(secret.Data["password"])
		Expect(password).To(HaveLen(postgres.PasswordLength))
		Expect(string(secret.Data["user"])).To(Equal(name))
		Expect(string(secret.Data["database"])).To(Equal(name))
		Expect(metav1.IsControlledBy(secret, bouncer("alpha"))).To(BeTrue())
		Expect(bouncer("alpha").Finalizers).To(ContainElement(ircv1.SojuDatabaseFinalizer))

		// The role logs in to its database and can make tables there, and only there.
		conn, err := pgx.Connect(ctx, pg.ConnString(name, password, name))
		Expect(err).NotTo(HaveOccurred())
		_, err = conn.Exec(ctx, "CREATE TABLE soju_probe (id int)")
		Expect(err).NotTo(HaveOccurred())
		var owner string
		Expect(conn.QueryRow(ctx, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()").Scan(&owner)).To(Succeed())
		Expect(owner).To(Equal(name), "the role owns its database: soju migrates its own schema")
		Expect(conn.Close(ctx)).To(Succeed())
		other, err := pgx.Connect(ctx, pg.ConnString(name, password, "postgres"))
		Expect(err).NotTo(HaveOccurred())
		_, err = other.Exec(ctx, "CREATE TABLE soju_probe (id int)")
		Expect(err).To(HaveOccurred(), "the role may create tables outside its database")
		Expect(other.Close(ctx)).To(Succeed())

		cm := &corev1.ConfigMap{}
		Eventually(get(ctx, cm, ns, "alpha-config")).Should(Succeed())
		Expect(cm.Data["config"]).To(ContainSubstring(fmt.Sprintf(`db postgres "host='%s' port=%d user='%s' dbname='%s' sslmode='disable'"`, pg.Host, pg.Port, name, name)))
		Expect(cm.Data["config"]).To(ContainSubstring("listen irc+insecure://:6667\nhostname alpha.irc.test\n"))
		Expect(cm.Data["config"]).NotTo(ContainSubstring(password))

		d := &appsv1.Deployment{}
		Eventually(get(ctx, d, ns, "alpha")).Should(Succeed())
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/soju:test"))
		Expect(d.Spec.Template.Spec.InitContainers).To(HaveLen(1))
		Expect(d.Spec.Template.Annotations[soju.ConfigDigestAnnotation]).To(Equal(soju.Digest([]byte(cm.Data["config"]), password, "admin-pw-1", nil)))

		eventually("alpha", ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonDeploymentPending)
		Expect(ergotest.MarkDeploymentAvailable(ctx, k8s, ns, "alpha")).To(Succeed())
		b := eventually("alpha", ircv1.ConditionReady, metav1.ConditionTrue, ircv1.ReasonReady)
		Expect(b.Status.DatabaseName).To(Equal(name))
		Expect(b.Status.DatabaseSecretName).To(Equal("alpha-db"))
		Expect(b.Status.ServiceHost).To(Equal("alpha." + ns + ".svc"))
		Expect(b.Status.Ports).To(Equal([]ircv1.ListenerStatus{{Name: "irc-6667", Port: 6667}}))
		Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))

		// Zero writes on an unchanged re-reconcile, once the cache caught up with the status write.
		req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "alpha"}}
		Eventually(func(g Gomega) {
			before := sojuWrites.In(ns)
			_, err := sojuR.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sojuWrites.In(ns) - before).To(BeZero())
		}).Should(Succeed())
		versions := func() map[string]string {
			out := map[string]string{}
			for key, obj := range map[string]client.Object{"alpha": &ircv1.SojuBouncer{}, "alpha-config": &corev1.ConfigMap{},
				"alpha-db": &corev1.Secret{}, "alpha-svc": &corev1.Service{}, "alpha-deploy": &appsv1.Deployment{}} {
				objName := strings.Split(key, "-")[0]
				if key == "alpha-config" || key == "alpha-db" {
					objName = key
				}
				Expect(get(ctx, obj, ns, objName)()).To(Succeed())
				out[key] = obj.GetResourceVersion()
			}
			return out
		}
		rv := versions()
		before := sojuWrites.In(ns)
		for range 3 {
			_, err := sojuR.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(sojuWrites.In(ns)-before).To(BeZero(), "an unchanged bouncer must cost no write")
		Expect(versions()).To(Equal(rv))

		// No password in any event.
		var events corev1.EventList
		Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		Expect(events.Items).NotTo(BeEmpty())
		for _, e := range events.Items {
			Expect(e.Message).NotTo(ContainSubstring(password))
			Expect(e.Message).NotTo(ContainSubstring("admin-pw-1"))
		}

		By("rolling the pod when the admin password changes")
		digest := d.Spec.Template.Annotations[soju.ConfigDigestAnnotation]
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := &corev1.Secret{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "alpha-admin"}, s); err != nil {
				return err
			}
			s.Data["password"] = []byte("admin-pw-2")
			return k8s.Update(ctx, s)
		})).To(Succeed())
		Eventually(func() string {
			_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "alpha"}, d)
			return d.Spec.Template.Annotations[soju.ConfigDigestAnnotation]
		}).ShouldNot(Equal(digest))

		By("dropping the database once the Deployment is gone (reclaimPolicy Delete)")
		Expect(k8s.Delete(ctx, bouncer("alpha"))).To(Succeed())
		eventually("alpha", ircv1.ConditionCleanup, metav1.ConditionFalse, ircv1.ReasonWaitingForDeployment)
		role, db := exists(name)
		Expect(role && db).To(BeTrue(), "the database is dropped before soju's Deployment is gone")
		finishForegroundDeletion("alpha")
		gone("alpha")
		role, db = exists(name)
		Expect(role || db).To(BeFalse(), "role %v, database %v left after a Delete", role, db)
	})

	It("reports a missing admin user Secret and holds the Deployment until it exists", func() {
		Expect(k8s.Create(ctx, sojutest.PlainBouncer(ns, "bravo", ""))).To(Succeed())
		eventually("bravo", ircv1.ConditionAdminUser, metav1.ConditionFalse, ircv1.ReasonSecretNotFound)
		b := eventually("bravo", ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting)
		Expect(b.Status.Conditions).To(ContainElement(HaveField("Type", ircv1.ConditionDatabase)))
		Expect(get(ctx, &appsv1.Deployment{}, ns, "bravo")()).To(MatchError(ContainSubstring("not found")))

		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bravo-admin"},
			StringData: map[string]string{"password": "two\nlines"}})).To(Succeed())
		eventually("bravo", ircv1.ConditionAdminUser, metav1.ConditionFalse, ircv1.ReasonInvalidPassword)

		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := &corev1.Secret{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bravo-admin"}, s); err != nil {
				return err
			}
			s.Data["password"] = []byte("one-line")
			return k8s.Update(ctx, s)
		})).To(Succeed())
		eventually("bravo", ircv1.ConditionAdminUser, metav1.ConditionTrue, ircv1.ReasonReady)
		Eventually(get(ctx, &appsv1.Deployment{}, ns, "bravo")).Should(Succeed())
	})

	It("reports an admin connection it cannot use, and lets such a bouncer go at once", func() {
		b := sojutest.MinimalBouncer(ns, "charlie")
		b.Spec.Database.AdminSecretName = "missing"
		Expect(k8s.Create(ctx, b)).To(Succeed())
		eventually("charlie", ircv1.ConditionDatabase, metav1.ConditionFalse, ircv1.ReasonSecretNotFound)
		eventually("charlie", ircv1.ConditionConfig, metav1.ConditionFalse, ircv1.ReasonWaiting)
		Expect(bouncer("charlie").Finalizers).To(BeEmpty(), "nothing was made on a server: no finalizer")

		// A login without CREATEROLE.
		Expect(pg.CreateRole(ctx, "soju_weak", "weak-pw", "CREATEDB")).To(Succeed())
		Expect(k8s.Create(ctx, sojutest.ConnectionSecret(ns, "missing", pg.Host, pg.Port, "soju_weak", "weak-pw"))).To(Succeed())
		eventually("charlie", ircv1.ConditionDatabase, metav1.ConditionFalse, ircv1.ReasonInsufficientPrivileges)
		Eventually(warningEvents(ctx, ns, "charlie")).Should(ContainElement(ircv1.ReasonInsufficientPrivileges))

		Expect(k8s.Delete(ctx, bouncer("charlie"))).To(Succeed())
		gone("charlie")
	})

	It("serves the operator-wide admin connection only to the namespaces --soju-database-namespaces lists", func() {
		listedNS := ns
		// Hostile: a namespace the flag does not list, using the operator-wide connection.
		ns = newNamespace()
		Expect(k8s.Create(ctx, sojutest.MinimalBouncer(ns, "delta"))).To(Succeed())
		b := eventually("delta", ircv1.ConditionDatabase, metav1.ConditionFalse, ircv1.ReasonAdminSecretNotAllowed)
		Expect(b.Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("--soju-database-namespaces"))))
		Eventually(warningEvents(ctx, ns, "delta")).Should(ContainElement(ircv1.ReasonAdminSecretNotAllowed))
		Expect(bouncer("delta").Finalizers).To(BeEmpty(), "nothing was made on a server: no finalizer")
		Consistently(get(ctx, &corev1.Secret{}, ns, "delta-db")).ShouldNot(Succeed())
		role, db := exists(postgres.Name(ns, "delta"))
		Expect([]bool{role, db}).To(Equal([]bool{false, false}), "a refused namespace reached the server")
		Expect(k8s.Delete(ctx, bouncer("delta"))).To(Succeed())
		gone("delta")

		// Control: the same bouncer in a listed namespace gets its database.
		ns = listedNS
		Expect(k8s.Create(ctx, sojutest.MinimalBouncer(ns, "delta"))).To(Succeed())
		eventually("delta", ircv1.ConditionDatabase, metav1.ConditionTrue, ircv1.ReasonReady)
		role, db = exists(postgres.Name(ns, "delta"))
		Expect([]bool{role, db}).To(Equal([]bool{true, true}))
	})

	It("keeps the database under reclaimPolicy Retain, and a new bouncer of the name takes it up", func() {
		b := sojutest.MinimalBouncer(ns, "delta")
		b.Spec.Database.ReclaimPolicy = ircv1.ReclaimRetain
		Expect(k8s.Create(ctx, b)).To(Succeed())
		name := postgres.Name(ns, "delta")
		eventually("delta", ircv1.ConditionDatabase, metav1.ConditionTrue, ircv1.ReasonReady)
		Expect(k8s.Delete(ctx, bouncer("delta"))).To(Succeed())
		gone("delta")
		role, db := exists(name)
		Expect(role && db).To(BeTrue(), "Retain dropped the database")

		// The garbage collector's part, which envtest does not run: the old children go.
		for _, obj := range []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "delta-db"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "delta-config"}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "delta"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "delta"}}} {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
		}
		Expect(k8s.Create(ctx, sojutest.MinimalBouncer(ns, "delta"))).To(Succeed())
		eventually("delta", ircv1.ConditionDatabase, metav1.ConditionTrue, ircv1.ReasonReady)
		secret := dbSecret("delta")
		Expect(postgres.CheckLogin(ctx, postgres.Settings{Host: pg.Host, Port: pg.Port, User: name, Password: string(secret.Data["password"]),
			Database: name, SSLMode: "disable"})).To(Succeed(), "the new bouncer's password is set on the kept role")
	})

	It("retries a cleanup it cannot do, and lets go on the release annotation", func() {
		Expect(k8s.Create(ctx, sojutest.ConnectionSecret(ns, "pg", pg.Host, pg.Port, "soju_operator", "operator-pw"))).To(Succeed())
		b := sojutest.MinimalBouncer(ns, "echo")
		b.Spec.Database.AdminSecretName = "pg"
		Expect(k8s.Create(ctx, b)).To(Succeed())
		eventually("echo", ircv1.ConditionDatabase, metav1.ConditionTrue, ircv1.ReasonReady)

		// The server goes away for the bouncer: its admin connection now points at a closed port.
		ports, err := freePort()
		Expect(err).NotTo(HaveOccurred())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := &corev1.Secret{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pg"}, s); err != nil {
				return err
			}
			s.Data["port"] = []byte(fmt.Sprint(ports))
			return k8s.Update(ctx, s)
		})).To(Succeed())
		Expect(k8s.Delete(ctx, bouncer("echo"))).To(Succeed())
		finishForegroundDeletion("echo")
		got := eventually("echo", ircv1.ConditionCleanup, metav1.ConditionFalse, ircv1.ReasonCleanupBlocked)
		Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Type", ircv1.ConditionCleanup), HaveField("Message", ContainSubstring(ircv1.AnnotationReleaseDatabase)))))
		Consistently(func() error {
			return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "echo"}, &ircv1.SojuBouncer{})
		}).Should(Succeed())

		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := bouncer("echo")
			if cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			cur.Annotations[ircv1.AnnotationReleaseDatabase] = "true"
			return k8s.Update(ctx, cur)
		})).To(Succeed())
		gone("echo")
		Eventually(warningEvents(ctx, ns, "echo")).Should(ContainElement(ircv1.ReasonCleanupAbandoned))
		role, db := exists(postgres.Name(ns, "echo"))
		Expect(role && db).To(BeTrue(), "a released bouncer's database must be left alone")
	})

	// Last in this ordered container: it turns TLS on for the server the specs share (every other
	// spec's admin Secret says sslmode disable, which TLS on the server does not change).
	It("gives soju an sslmode its driver accepts for an admin Secret without one (prefer), with TLS and without", func() {
		// The config's db line opened as soju opens it: lib/pq, the password in PGPASSWORD.
		driverOpen := func(connInfo, password string) (bool, error) {
			old, had := os.LookupEnv("PGPASSWORD")
			Expect(os.Setenv("PGPASSWORD", password)).To(Succeed())
			defer func() {
				if had {
					_ = os.Setenv("PGPASSWORD", old)
				} else {
					_ = os.Unsetenv("PGPASSWORD")
				}
			}()
			db, err := sql.Open("postgres", connInfo)
			if err != nil {
				return false, err
			}
			defer func() { _ = db.Close() }()
			var tls bool
			err = db.QueryRowContext(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&tls)
			return tls, err
		}
		dbLine := func(name string) string {
			cm := &corev1.ConfigMap{}
			EventuallyWithOffset(1, get(ctx, cm, ns, name+"-config")).Should(Succeed())
			for _, line := range strings.Split(cm.Data["config"], "\n") {
				if rest, ok := strings.CutPrefix(line, "db postgres "); ok {
					ci, err := strconv.Unquote(rest)
					ExpectWithOffset(1, err).NotTo(HaveOccurred())
					return ci
				}
			}
			Fail("no db line in " + cm.Data["config"])
			return ""
		}
		check := func(bouncerName, wantMode string, wantTLS bool) {
			eventually(bouncerName, ircv1.ConditionDatabase, metav1.ConditionTrue, ircv1.ReasonReady)
			eventually(bouncerName, ircv1.ConditionConfig, metav1.ConditionTrue, ircv1.ReasonApplied)
			name := postgres.Name(ns, bouncerName)
			ci := dbLine(bouncerName)
			ExpectWithOffset(1, ci).To(Equal(fmt.Sprintf("host='%s' port=%d user='%s' dbname='%s' sslmode='%s'", pg.Host, pg.Port, name, name, wantMode)))
			password := string(dbSecret(bouncerName).Data["password"])
			tls, err := driverOpen(ci, password)
			ExpectWithOffset(1, err).NotTo(HaveOccurred(), "lib/pq refuses the rendered db line %s", ci)
			ExpectWithOffset(1, tls).To(Equal(wantTLS))
			// The line as it was rendered before, the admin Secret's default prefer as it is: refused.
			_, err = driverOpen(strings.Replace(ci, "sslmode='"+wantMode+"'", "sslmode='prefer'", 1), password)
			ExpectWithOffset(1, err).To(MatchError(ContainSubstring("unsupported sslmode")))
		}
		withoutSSLMode := func(name, user string) *corev1.Secret {
			sec := sojutest.ConnectionSecret(ns, name, pg.Host, pg.Port, user, "operator-pw")
			delete(sec.StringData, "sslmode")
			return sec
		}

		By("a server without TLS: the operator's prefer session ran without, soju gets disable")
		Expect(k8s.Create(ctx, withoutSSLMode("plain-admin", "soju_operator"))).To(Succeed())
		b := sojutest.MinimalBouncer(ns, "foxtrot")
		b.Spec.Database.AdminSecretName = "plain-admin"
		Expect(k8s.Create(ctx, b)).To(Succeed())
		check("foxtrot", "disable", false)
		// The role's Secret keeps the admin connection's sslmode, for libpq clients that take it.
		Expect(string(dbSecret("foxtrot").Data["sslmode"])).To(Equal(postgres.DefaultSSLMode))

		By("a server with TLS: the operator's prefer session negotiated it, soju gets require")
		tlsFiles, err := postgrestest.NewTLSFiles()
		Expect(err).NotTo(HaveOccurred())
		Expect(pg.EnableTLS(ctx, tlsFiles)).To(Succeed())
		// Another login, so that no session of the pool opened before TLS is reused.
		Expect(pg.CreateRole(ctx, "soju_operator_tls", "operator-pw", "CREATEROLE CREATEDB")).To(Succeed())
		Expect(k8s.Create(ctx, withoutSSLMode("tls-admin", "soju_operator_tls"))).To(Succeed())
		b = sojutest.MinimalBouncer(ns, "golf")
		b.Spec.Database.AdminSecretName = "tls-admin"
		Expect(k8s.Create(ctx, b)).To(Succeed())
		check("golf", "require", true)
	})

	It("serves soju's metrics with a PodMonitor when spec.metrics enables them, and takes back only its own", func() {
		Expect(k8s.Create(ctx, sojutest.AdminUserSecret(ns, "mon-admin", "admin-pw"))).To(Succeed())
		b := sojutest.PlainBouncer(ns, "mon", "")
		b.Spec.Metrics = &ircv1.SojuMetrics{Enabled: true}
		Expect(k8s.Create(ctx, b)).To(Succeed())

		cm := &corev1.ConfigMap{}
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, cm, ns, "mon-config")()).To(Succeed())
			g.Expect(cm.Data["config"]).To(ContainSubstring("listen irc+insecure://:6667\nlisten http+insecure+prometheus://:9090\nhostname "))
		}).Should(Succeed())
		metricsPort := func(ports []corev1.ContainerPort) *corev1.ContainerPort {
			for i := range ports {
				if ports[i].Name == soju.MetricsPortName {
					return &ports[i]
				}
			}
			return nil
		}
		servicePort := func(s *corev1.Service) *corev1.ServicePort {
			for i := range s.Spec.Ports {
				if s.Spec.Ports[i].Name == soju.MetricsPortName {
					return &s.Spec.Ports[i]
				}
			}
			return nil
		}
		d := &appsv1.Deployment{}
		Eventually(get(ctx, d, ns, "mon")).Should(Succeed())
		Expect(metricsPort(d.Spec.Template.Spec.Containers[0].Ports)).To(HaveField("ContainerPort", int32(9090)))
		svc := &corev1.Service{}
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, svc, ns, "mon")()).To(Succeed())
			g.Expect(servicePort(svc)).NotTo(BeNil())
		}).Should(Succeed())
		Expect(servicePort(svc).Port).To(Equal(int32(9090)))
		Expect(servicePort(svc).TargetPort.StrVal).To(Equal(soju.MetricsPortName))

		pm := &monitoring.PodMonitor{}
		Eventually(get(ctx, pm, ns, "mon")).Should(Succeed())
		Expect(metav1.IsControlledBy(pm, bouncer("mon"))).To(BeTrue())
		Expect(pm.Spec.Selector.MatchLabels).To(Equal(soju.SelectorLabels(bouncer("mon"))))
		Expect(pm.Spec.PodMetricsEndpoints).To(Equal([]monitoring.PodMetricsEndpoint{{Port: "metrics", Path: "/metrics", Scheme: "http"}}))

		Expect(ergotest.MarkDeploymentAvailable(ctx, k8s, ns, "mon")).To(Succeed())
		eventually("mon", ircv1.ConditionReady, metav1.ConditionTrue, ircv1.ReasonReady)
		got := eventually("mon", ircv1.ConditionMetricsMonitor, metav1.ConditionTrue, ircv1.ReasonApplied)
		Expect(got.Status.Ports).To(Equal([]ircv1.ListenerStatus{{Name: "irc-6667", Port: 6667}}), "clients are not sent to the metrics port")

		By("disabling metrics: no listener, no port, and the PodMonitor the operator made is deleted")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := bouncer("mon")
			cur.Spec.Metrics.Enabled = false
			return k8s.Update(ctx, cur)
		})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "mon"}, &monitoring.PodMonitor{}))
		}).Should(BeTrue())
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, cm, ns, "mon-config")()).To(Succeed())
			g.Expect(cm.Data["config"]).NotTo(ContainSubstring("prometheus"))
			g.Expect(get(ctx, d, ns, "mon")()).To(Succeed())
			g.Expect(metricsPort(d.Spec.Template.Spec.Containers[0].Ports)).To(BeNil())
			g.Expect(get(ctx, svc, ns, "mon")()).To(Succeed())
			g.Expect(servicePort(svc)).To(BeNil())
			cur := bouncer("mon")
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
			for _, c := range cur.Status.Conditions {
				g.Expect(c.Type).NotTo(Equal(ircv1.ConditionMetricsMonitor))
			}
		}).Should(Succeed())

		By("leaving alone a PodMonitor of that name the operator did not make, disabled or enabled")
		foreign := &monitoring.PodMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mon"},
			Spec: monitoring.PodMonitorSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}}}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := bouncer("mon")
			cur.Spec.Title = "touched"
			return k8s.Update(ctx, cur)
		})).To(Succeed())
		Eventually(func(g Gomega) {
			cur := bouncer("mon")
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		}).Should(Succeed())
		// The status of the new generation is written after the metrics step ran for it.
		Expect(get(ctx, &monitoring.PodMonitor{}, ns, "mon")()).To(Succeed())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := bouncer("mon")
			cur.Spec.Metrics.Enabled = true
			return k8s.Update(ctx, cur)
		})).To(Succeed())
		eventually("mon", ircv1.ConditionMetricsMonitor, metav1.ConditionFalse, ircv1.ReasonNameConflict)
		// The listener is back in the config, which rolled the Deployment: the stand-in for its controller again.
		Expect(ergotest.MarkDeploymentAvailable(ctx, k8s, ns, "mon")).To(Succeed())
		eventually("mon", ircv1.ConditionReady, metav1.ConditionTrue, ircv1.ReasonReady)
		left := &monitoring.PodMonitor{}
		Expect(get(ctx, left, ns, "mon")()).To(Succeed())
		Expect(left.UID).To(Equal(foreign.UID))
		Expect(left.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": "other"}))
		Expect(left.OwnerReferences).To(BeEmpty())
	})

	// No backup controller runs here: the scenario writes the Backups' statuses itself.
	It("shows its newest Completed Backup, not a Failed or Running one, nor another namespace's or kind's", func() {
		// An admin connection that does not exist: the bouncer waits for it, and its status is written all the same.
		b := sojutest.MinimalBouncer(ns, "echo")
		b.Spec.Database.AdminSecretName = "missing"
		Expect(k8s.Create(ctx, b)).To(Succeed())
		lastbackuptest.Run(ctx, k8s, lastbackuptest.Source{Object: b, OtherKind: backupv1.SourcePostgresDatabase, OtherNamespace: newNamespace(),
			Bump: func(ctx context.Context) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					cur := &ircv1.SojuBouncer{}
					if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
						return err
					}
					if cur.Spec.Database.ReclaimPolicy == ircv1.ReclaimRetain {
						cur.Spec.Database.ReclaimPolicy = ircv1.ReclaimDelete
					} else {
						cur.Spec.Database.ReclaimPolicy = ircv1.ReclaimRetain
					}
					return k8s.Update(ctx, cur)
				})
			}})
	})
})

// freePort is a port on 127.0.0.1 that nothing listens on: one the kernel handed out a moment ago.
func freePort() (int, error) {
	ports, err := testutil.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
