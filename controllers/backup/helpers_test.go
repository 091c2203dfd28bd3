package backup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// newBucket makes a bucket of the spec's own on the suite's S3 server.
func newBucket() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bk-" + hex.EncodeToString(b)
	_, err := s3.CreateBucket(context.Background(), name, "")
	Expect(err).NotTo(HaveOccurred())
	return name
}

// createCredentials makes the Secret name in ns holding the access key pair.
func createCredentials(ns, name, keyID, secret string) {
	Expect(k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secret}})).To(Succeed())
}

// createStore makes a BackupStore on the suite's S3 server.
func createStore(ns, name, bucket, prefix, secretName string) *backupv1.BackupStore {
	store := &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupv1.BackupStoreSpec{Endpoint: s3.Endpoint, Bucket: bucket, Prefix: prefix, Region: "us-east-1",
			Credentials: backupv1.BackupStoreCredentials{SecretName: secretName}}}
	Expect(k8s.Create(context.Background(), store)).To(Succeed())
	return store
}

// readyOf is the Ready condition of obj, read from the API server (nil when absent).
func readyOf(obj client.Object, conds func() []metav1.Condition) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return meta.FindStatusCondition(conds(), reconcile.ConditionReady)
	}
}

// storeReady waits for store's Ready to have status and reason, and returns the store as read.
func storeReady(store *backupv1.BackupStore, status metav1.ConditionStatus, reason string) *backupv1.BackupStore {
	Eventually(readyOf(store, func() []metav1.Condition { return store.Status.Conditions })).
		WithTimeout(testenv.EventuallyTimeout).Should(And(Not(BeNil()),
		HaveField("Status", status), HaveField("Reason", reason)))
	return store
}

// eventsText is every event's reason and message in ns, one line each.
func eventsText(ns string) string {
	var list corev1.EventList
	Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var b strings.Builder
	for _, e := range list.Items {
		b.WriteString(e.Reason + ": " + e.Message + "\n")
	}
	return b.String()
}
