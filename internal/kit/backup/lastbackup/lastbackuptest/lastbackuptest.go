// Package lastbackuptest is the one envtest scenario of status.lastBackup, which every source kind's
// controller suite runs against its own controller (controllers/homelab, controllers/irc): the same
// Backups, the same controls, so the kinds cannot drift apart; and the cluster without the backup API
// those suites also run on.
package lastbackuptest

import (
	"context"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// Source is the object under test, which the suite created and whose controller runs; no backup
// controller may run (the scenario writes the Backups' statuses as that controller would).
type Source struct {
	// Object names the object (its type, namespace and name; nothing else is read).
	Object client.Object
	// Bump changes the object's spec, so that its generation grows and its controller reconciles it
	// once more: the scenario then waits for status.observedGeneration to catch up, and so knows that a
	// reconcile ran after the Backups it made, even those no watch wakes the object for.
	Bump func(ctx context.Context) error
	// OtherKind is a backed-up kind other than the object's: a Backup of it with the object's name is not
	// the object's.
	OtherKind backupv1.SourceKind
	// OtherNamespace is another namespace: a Backup there of the object's kind and name is not the
	// object's.
	OtherNamespace string
}

// shown is what the object's status says.
type shown struct {
	observed, generation int64
	time                 *time.Time
	name                 string
}

// Run runs the scenario on src through c, a direct client: the object shows no last backup; Completed
// Backups of another kind and of another namespace (both newer than any of its own) are not shown; its
// Completed Backup is shown, then a newer one; a newer Failed or Running one changes nothing; when the
// shown one is deleted the one before it is shown.
func Run(ctx context.Context, c client.Client, src Source) {
	ginkgo.GinkgoHelper()
	gvk, err := apiutil.GVKForObject(src.Object, c.Scheme())
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	kind := backupv1.SourceKind(gvk.Kind)
	ns, name := src.Object.GetNamespace(), src.Object.GetName()
	read := func(g gomega.Gomega) shown {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(gomega.Succeed())
		var s shown
		s.generation = u.GetGeneration()
		s.observed, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		s.name, _, _ = unstructured.NestedString(u.Object, "status", "lastBackup")
		if at, ok, _ := unstructured.NestedString(u.Object, "status", "lastBackupTime"); ok {
			t, err := time.Parse(time.RFC3339, at)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			s.time = &t
		}
		return s
	}
	// reconciled waits until the controller reconciled the object after a Bump, and returns its status.
	reconciled := func() shown {
		ginkgo.GinkgoHelper()
		gomega.Expect(src.Bump(ctx)).To(gomega.Succeed())
		var s shown
		gomega.Eventually(func(g gomega.Gomega) {
			s = read(g)
			g.Expect(s.observed).To(gomega.Equal(s.generation), "the controller has not reconciled the bumped spec")
		}).Should(gomega.Succeed())
		return s
	}
	// shows waits until the object shows Backup want, committed at at.
	shows := func(want string, at time.Time) {
		ginkgo.GinkgoHelper()
		gomega.Eventually(func(g gomega.Gomega) {
			s := read(g)
			g.Expect(s.name).To(gomega.Equal(want))
			g.Expect(s.time).NotTo(gomega.BeNil())
			g.Expect(s.time.Equal(at)).To(gomega.BeTrue(), "lastBackupTime %s, want %s", s.time, at)
		}).Should(gomega.Succeed())
	}

	t0 := time.Now().UTC().Truncate(time.Second).Add(-24 * time.Hour)
	gomega.Eventually(func(g gomega.Gomega) { g.Expect(read(g).observed).To(gomega.BeNumerically(">", 0)) }).Should(gomega.Succeed(), "no status written")

	// The controls: newer than every Backup of the object's own, so that an object shown one of them
	// would never show its own.
	Make(ctx, c, src.OtherNamespace, name+"-elsewhere", kind, name, backupv1.BackupCompleted, t0.Add(time.Hour))
	Make(ctx, c, ns, name+"-other-kind", src.OtherKind, name, backupv1.BackupCompleted, t0.Add(time.Hour))
	s := reconciled()
	gomega.Expect(s.name).To(gomega.BeEmpty(), "another namespace's or kind's Backup shown")
	gomega.Expect(s.time).To(gomega.BeNil(), "another namespace's or kind's Backup shown")

	Make(ctx, c, ns, name+"-1", kind, name, backupv1.BackupCompleted, t0)
	shows(name+"-1", t0)
	Make(ctx, c, ns, name+"-2", kind, name, backupv1.BackupCompleted, t0.Add(10*time.Minute))
	shows(name+"-2", t0.Add(10*time.Minute))

	Make(ctx, c, ns, name+"-failed", kind, name, backupv1.BackupFailed, t0.Add(20*time.Minute))
	Make(ctx, c, ns, name+"-running", kind, name, backupv1.BackupRunning, time.Time{})
	s = reconciled()
	gomega.Expect(s.name).To(gomega.Equal(name+"-2"), "a Failed or Running Backup shown")

	gomega.Expect(c.Delete(ctx, &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-2"}})).To(gomega.Succeed())
	shows(name+"-1", t0)
}

// Make creates Backup ns/name of kind/source and gives it the status the backup controller would: phase,
// started a minute before completed, completed at completed (not when it is zero).
func Make(ctx context.Context, c client.Client, ns, name string, kind backupv1.SourceKind, source string, phase backupv1.BackupPhase, completed time.Time) *backupv1.Backup {
	ginkgo.GinkgoHelper()
	b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: kind, Name: source}, Store: "main"}}
	gomega.Expect(c.Create(ctx, b)).To(gomega.Succeed())
	b.Status.Phase = phase
	if !completed.IsZero() {
		b.Status.StartTime, b.Status.CompletionTime = &metav1.Time{Time: completed.Add(-time.Minute)}, &metav1.Time{Time: completed}
	}
	gomega.Expect(c.Status().Update(ctx, b)).To(gomega.Succeed())
	return b
}

// RemoveBackupAPI deletes the backup.josie.cloud CRDs from the API server c and cfg reach, and waits
// until discovery no longer serves Backups: a cluster where the operator was installed without them.
func RemoveBackupAPI(ctx context.Context, c client.Client, cfg *rest.Config) {
	ginkgo.GinkgoHelper()
	for _, plural := range []string{"backups", "backupstores", "backupschedules"} {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		crd.SetName(plural + "." + backupv1.GroupVersion.Group)
		gomega.Expect(client.IgnoreNotFound(c.Delete(ctx, crd))).To(gomega.Succeed())
	}
	// The API server stops serving a deleted CRD's group once its cleanup finalizer has run; on a busy
	// machine (make test runs packages in parallel, each with its API servers) that took over 30 s.
	gomega.Eventually(func(g gomega.Gomega) {
		caps, err := platform.Discover(cfg)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(caps.Backups).To(gomega.BeFalse())
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(gomega.Succeed())
}
