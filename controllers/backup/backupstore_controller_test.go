package backup

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

var _ = Describe("BackupStore", func() {
	ctx := context.Background()

	It("is Ready with the right credentials, at s3://bucket/prefix/namespace/, and writes nothing when nothing changed", func() {
		ns := newNamespace("store-ok")
		bucket := newBucket()
		createCredentials(ns, "s3", s3.AccessKeyID, s3.SecretAccessKey)
		store := storeReady(createStore(ns, "main", bucket, "prod", "s3"), metav1.ConditionTrue, backupv1.ReasonReachable)
		Expect(store.Status.Location).To(Equal(fmt.Sprintf("s3://%s/prod/%s/", bucket, ns)))
		Expect(store.Status.ObservedGeneration).To(Equal(store.Generation))

		// A change of the Secret's metadata wakes the store; its status is unchanged, so nothing is written.
		rv := store.ResourceVersion
		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3"}, &secret)).To(Succeed())
		secret.Labels = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, &secret)).To(Succeed())
		Consistently(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(store), store)).To(Succeed())
			return store.ResourceVersion
		}).WithTimeout(testenv.ConsistentlyDuration).Should(Equal(rv))
	})

	It("refuses wrong credentials as CredentialsRefused without the secret in status or events, and turns Ready when the Secret is fixed", func() {
		ns := newNamespace("store-creds")
		bucket := newBucket()
		const wrong = "wrong-secret-value-f00dbabe"
		createCredentials(ns, "s3", s3.AccessKeyID, wrong)
		store := storeReady(createStore(ns, "main", bucket, "", "s3"), metav1.ConditionFalse, backupv1.ReasonCredentialsRefused)
		Expect(store.Status.Location).To(BeEmpty())
		Eventually(func() string { return eventsText(ns) }).WithTimeout(testenv.EventuallyTimeout).Should(ContainSubstring(backupv1.ReasonCredentialsRefused))
		for _, text := range []string{fmt.Sprintf("%+v", store.Status), eventsText(ns)} {
			Expect(text).NotTo(ContainSubstring(wrong))
			Expect(text).NotTo(ContainSubstring(s3.SecretAccessKey))
		}

		// Positive control: the right secret in the same Secret makes the same store Ready.
		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3"}, &secret)).To(Succeed())
		secret.Data["AWS_SECRET_ACCESS_KEY"] = []byte(s3.SecretAccessKey)
		Expect(k8s.Update(ctx, &secret)).To(Succeed())
		storeReady(store, metav1.ConditionTrue, backupv1.ReasonReachable)
		Expect(eventsText(ns)).NotTo(ContainSubstring(s3.SecretAccessKey))
	})

	It("reports a missing Secret, key and bucket by their reasons", func() {
		ns := newNamespace("store-missing")
		bucket := newBucket()
		storeReady(createStore(ns, "nosecret", bucket, "", "absent"), metav1.ConditionFalse, backupv1.ReasonSecretMissing)

		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "half"},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3.AccessKeyID}})).To(Succeed())
		half := storeReady(createStore(ns, "halfsecret", bucket, "", "half"), metav1.ConditionFalse, backupv1.ReasonSecretMissing)
		Expect(readyCond(half).Message).To(ContainSubstring("AWS_SECRET_ACCESS_KEY"))

		createCredentials(ns, "s3", s3.AccessKeyID, s3.SecretAccessKey)
		storeReady(createStore(ns, "nobucket", "bk-does-not-exist", "", "s3"), metav1.ConditionFalse, backupv1.ReasonBucketMissing)
		// Control: the same Secret on an existing bucket.
		storeReady(createStore(ns, "bucket", bucket, "", "s3"), metav1.ConditionTrue, backupv1.ReasonReachable)
	})

	It("reads the CA bundle from a ConfigMap of its namespace, woken when the ConfigMap appears", func() {
		ns := newNamespace("store-ca")
		bucket := newBucket()
		createCredentials(ns, "s3", s3.AccessKeyID, s3.SecretAccessKey)
		store := &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
			Spec: backupv1.BackupStoreSpec{Endpoint: s3.Endpoint, Bucket: bucket, Region: "us-east-1",
				Credentials: backupv1.BackupStoreCredentials{SecretName: "s3"},
				CABundle:    &backupv1.BackupStoreCA{ConfigMapName: "store-ca"}}}
		Expect(k8s.Create(ctx, store)).To(Succeed())
		storeReady(store, metav1.ConditionFalse, backupv1.ReasonSecretMissing)
		Expect(readyCond(store).Message).To(ContainSubstring("store-ca"))
		// Nothing requeues a missing ConfigMap but its watch: its creation must wake the store, whose
		// bundle is then read (and refused: it is not PEM).
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store-ca"},
			Data: map[string]string{"ca.crt": "not a certificate"}})).To(Succeed())
		storeReady(store, metav1.ConditionFalse, backupv1.ReasonInvalid)
		Expect(readyCond(store).Message).To(ContainSubstring("CA bundle"))
	})

	It("refuses a prefix that puts one namespace's tree inside another's, without naming the other namespace", func() {
		bucket := newBucket()
		// Made in the same second, the stores tie on creationTimestamp and namespace order decides: the
		// names sort the owner first, so the owner keeps its tree whichever rule decides.
		owner := newNamespace("store-a-owner")
		createCredentials(owner, "s3", s3.AccessKeyID, s3.SecretAccessKey)
		storeReady(createStore(owner, "main", bucket, "prod", "s3"), metav1.ConditionTrue, backupv1.ReasonReachable)

		// The intruder's prefix prod/<owner> puts its tree at prod/<owner>/<intruder>/, inside the owner's.
		intruder := newNamespace("store-z-intruder")
		createCredentials(intruder, "s3", s3.AccessKeyID, s3.SecretAccessKey)
		bad := storeReady(createStore(intruder, "main", bucket, "prod/"+owner, "s3"), metav1.ConditionFalse, backupv1.ReasonPrefixConflict)
		Expect(bad.Status.Location).To(BeEmpty())
		// The message names the intruder's own tree (which holds the owner's name because the intruder wrote
		// it in its prefix), and nothing of the other store: cut the own tree out, and no owner name is left.
		ownTree := namespaceRoot(bad.Spec.Prefix, intruder)
		Expect(readyCond(bad).Message).To(ContainSubstring(ownTree))
		Expect(strings.ReplaceAll(readyCond(bad).Message, ownTree, "")).NotTo(ContainSubstring(owner))
		Expect(strings.ReplaceAll(eventsText(intruder), ownTree, "")).NotTo(ContainSubstring(owner))
		// The owner keeps its tree.
		storeReady(&backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "main"}}, metav1.ConditionTrue, backupv1.ReasonReachable)

		// Control: a distinct prefix on the same bucket is Ready.
		storeReady(createStore(intruder, "other", bucket, "staging", "s3"), metav1.ConditionTrue, backupv1.ReasonReachable)

		// Deleting the owner's store frees the tree: the refused store is woken and becomes Ready.
		Expect(k8s.Delete(ctx, &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "main"}})).To(Succeed())
		storeReady(bad, metav1.ConditionTrue, backupv1.ReasonReachable)
		Expect(strings.HasPrefix(bad.Status.Location, "s3://"+bucket+"/prod/"+owner+"/"+intruder+"/")).To(BeTrue())
	})
})

// readyCond is the Ready condition of store as last read.
func readyCond(store *backupv1.BackupStore) metav1.Condition {
	for _, c := range store.Status.Conditions {
		if c.Type == "Ready" {
			return c
		}
	}
	return metav1.Condition{}
}
