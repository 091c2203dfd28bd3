package backup

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/testutil/pki"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

var _ = Describe("BackupStore over TLS", func() {
	It("reaches a store whose certificate chains to the CA bundle of its ConfigMap, and not with another CA", func(ctx SpecContext) {
		ca, err := pki.NewCA("store-ca", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		pair, err := ca.Server("versitygw")
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		certFile, err := pki.WriteFile(dir, "tls.crt", pair.Cert)
		Expect(err).NotTo(HaveOccurred())
		keyFile, err := pki.WriteFile(dir, "tls.key", pair.Key)
		Expect(err).NotTo(HaveOccurred())
		srv, err := s3test.StartTLS(context.Background(), certFile, keyFile)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = srv.Stop() })
		cfg := srv.Config("tls-bucket", "")
		cfg.CABundle = ca.PEM
		// s3test's CreateBucket trusts the system roots: make the bucket through a client with the CA.
		st, err := objectstore.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.CreateBucket(ctx)).To(Succeed())
		other, err := pki.NewCA("other-ca", time.Hour)
		Expect(err).NotTo(HaveOccurred())

		ns := newNamespace("store-tls")
		createCredentials(ns, "s3", srv.AccessKeyID, srv.SecretAccessKey)
		for name, pem := range map[string][]byte{"store-ca": ca.PEM, "other-ca": other.PEM} {
			Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Data: map[string]string{"ca.crt": string(pem)}})).To(Succeed())
		}
		store := func(name, caName string) *backupv1.BackupStore {
			s := &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: backupv1.BackupStoreSpec{Endpoint: srv.Endpoint, Bucket: "tls-bucket", Region: "us-east-1",
					Credentials: backupv1.BackupStoreCredentials{SecretName: "s3"},
					CABundle:    &backupv1.BackupStoreCA{ConfigMapName: caName}}}
			Expect(k8s.Create(ctx, s)).To(Succeed())
			return s
		}
		storeReady(store("good", "store-ca"), metav1.ConditionTrue, backupv1.ReasonReachable)
		bad := storeReady(store("bad", "other-ca"), metav1.ConditionFalse, backupv1.ReasonStoreUnreachable)
		Expect(readyCond(bad).Message).To(ContainSubstring("certificate"))
		Expect(readyCond(bad).Message).NotTo(ContainSubstring(srv.SecretAccessKey))
	})
})
