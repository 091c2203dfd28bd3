//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

var _ = Describe("operator permissions", func() {
	It("permissions: the operator runs as its CSV's ServiceAccount, and a permission missing from the CSV is refused and caught", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "oper", "perm"))).To(Succeed())
		op := startOperator("permissions", operatorConfig{namespace: ns})

		By("the process's kubeconfig authenticates as the CSV's ServiceAccount in the operator's namespace, not as the admin")
		Expect(op.Args).To(ContainElement("--kubeconfig=" + op.identity.Kubeconfig))
		Expect(op.identity.Username).To(HavePrefix("system:serviceaccount:" + ns + ":"))
		cfg, err := clientcmd.BuildConfigFromFlags("", op.identity.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ssr.Status.UserInfo.Username).To(Equal(op.identity.Username))
		as, err := client.New(cfg, client.Options{Scheme: cluster.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(as.List(ctx, &corev1.SecretList{}, client.InNamespace(metav1.NamespaceSystem))).To(Satisfy(apierrors.IsForbidden),
			"the operator's identity reads Secrets outside the namespace its CSV is installed for")

		By("with the bundle's permissions a network converges and nothing is refused")
		Expect(k8s.Create(ctx, ergotest.PlainNetwork(ns, "granted", "oper"))).To(Succeed())
		Eventually(ctx, converged(ctx, ns, "granted")).WithTimeout(90 * time.Second).Should(Succeed())
		Expect(op.forbidden()).To(BeEmpty())

		By("control: the same CSV without its events rules; the operator's events are refused, and the suite's check sees it")
		other := newNamespace(ctx, nil)
		Expect(k8s.Create(ctx, ergotest.OperSecret(other, "oper", "perm"))).To(Succeed())
		lacking := startOperator("permissions-no-events", operatorConfig{
			namespace: other, csv: csvWithout("events"), refusalsExpected: true,
		})
		Expect(k8s.Create(ctx, ergotest.PlainNetwork(other, "refused", "oper"))).To(Succeed())
		Eventually(ctx, func() string { return strings.Join(lacking.forbidden(), "\n") }).
			Should(MatchRegexp(`cannot (create|patch) resource \\?"events\\?"`))
	})
})

// csvWithout writes into the log directory the bundle's CSV with resource taken out of every rule of its
// permissions and clusterPermissions, and returns its path. It fails when the CSV grants no such
// resource, so the control always takes something away.
func csvWithout(resource string) string {
	GinkgoHelper()
	csv, err := localcluster.ReadCSV(csvPath)
	Expect(err).NotTo(HaveOccurred())
	spec := &csv.Spec.InstallStrategy.StrategySpec
	removed := 0
	for _, perms := range [][]operatorsv1alpha1.StrategyDeploymentPermissions{spec.Permissions, spec.ClusterPermissions} {
		for i := range perms {
			rules := perms[i].Rules[:0]
			for _, r := range perms[i].Rules {
				if n := len(r.Resources); slices.Contains(r.Resources, resource) {
					r.Resources = slices.DeleteFunc(r.Resources, func(s string) bool { return s == resource })
					removed += n - len(r.Resources)
				}
				if len(r.Resources) > 0 || len(r.NonResourceURLs) > 0 {
					rules = append(rules, r)
				}
			}
			perms[i].Rules = rules
		}
	}
	Expect(removed).To(BeNumerically(">", 0), "the CSV %s grants no %s", csvPath, resource)
	data, err := yaml.Marshal(csv)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(logDir, "csv-without-"+resource+".yaml")
	Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	return path
}
