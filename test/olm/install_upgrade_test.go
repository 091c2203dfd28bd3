//go:build linux

package olm

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

const (
	olmNamespace     = "olm"
	installNamespace = "platform-operator"
	catalogName      = "platform-operator-local"
	deploymentName   = "platform-operator-controller-manager"
	firstVersion     = "0.1.0"
	nextVersion      = "0.1.1"
	networkName      = "olm-network"
)

var _ = Describe("OLM", Ordered, func() {
	var (
		opm                      *opmServer
		operator                 *proc
		iotAsStored, iotExported []unstructured.Unstructured
		pvcUID                   types.UID
		podUID                   types.UID
		ergoDep                  appsv1.Deployment
	)

	It("installs the operator from a CatalogSource and an ErgoNetwork becomes Ready", func(ctx SpecContext) {
		phase("olm and catalog operators start", func() { startOLM(ctx) })

		phase("catalog render and opm serve", func() {
			ports, err := testutil.FreePorts(2)
			Expect(err).NotTo(HaveOccurred())
			opm = &opmServer{port: ports[0], pprofPort: ports[1]}
			dir := filepath.Join(workDir, "catalog-1")
			newCatalog(dir, []string{previous.bundle})
			opm.serve(dir)
		})

		phase("CatalogSource READY", func() {
			Expect(k8s.Create(ctx, &operatorsv1alpha1.CatalogSource{
				ObjectMeta: metav1.ObjectMeta{Name: catalogName, Namespace: olmNamespace},
				Spec: operatorsv1alpha1.CatalogSourceSpec{
					SourceType:  operatorsv1alpha1.SourceTypeGrpc,
					Address:     net.JoinHostPort("127.0.0.1", strconv.Itoa(opm.port)),
					DisplayName: "platform-operator (local opm serve)",
					Publisher:   "test/olm",
				},
			})).To(Succeed())
			waitCatalogReady(ctx)
		})

		phase("OperatorGroup and Subscription", func() {
			createNamespace(ctx, installNamespace)
			Expect(k8s.Create(ctx, &operatorsv1.OperatorGroup{
				ObjectMeta: metav1.ObjectMeta{Name: "platform-operator", Namespace: installNamespace},
				Spec:       operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{installNamespace}},
			})).To(Succeed())
			Expect(k8s.Create(ctx, &operatorsv1alpha1.Subscription{
				ObjectMeta: metav1.ObjectMeta{Name: packageName, Namespace: installNamespace},
				Spec: &operatorsv1alpha1.SubscriptionSpec{
					CatalogSource:          catalogName,
					CatalogSourceNamespace: olmNamespace,
					Package:                packageName,
					Channel:                channelName,
					InstallPlanApproval:    operatorsv1alpha1.ApprovalAutomatic,
				},
			})).To(Succeed())
		})

		phase("CSV v"+firstVersion+" Succeeded", func() { waitCSVSucceeded(ctx, firstVersion) })

		phase("previous release's operator ("+previous.commit[:12]+") start as the CSV's Deployment", func() {
			operator = runAsDeployment(ctx, firstVersion, previous.binary, true)
		})

		phase("ErgoNetwork Ready", func() {
			Expect(k8s.Create(ctx, ergotest.OperSecret(installNamespace, networkName+"-oper", "olm-e2e"))).To(Succeed())
			n := ergotest.PlainNetwork(installNamespace, networkName, networkName+"-oper")
			n.Spec.Storage.Size = ptr.To(resource.MustParse("1Gi"))
			Expect(k8s.Create(ctx, n)).To(Succeed())
			Eventually(ctx, ready(ctx)).WithTimeout(3*time.Minute).Should(Succeed(), "operator log:\n%s", operator.tail(30))
			pvc := networkPVC(ctx)
			pvcUID = pvc.UID
			pod := networkPod(ctx)
			podUID = pod.UID
			ergoDep = ergoDeployment(ctx)
			fmt.Fprintf(os.Stdout, "olm: network Ready with claim %s (%s) and pod %s (%s)\n", pvc.Name, pvc.UID, pod.Name, pod.UID)
		})

		phase("iot Deployments under "+oldIoTCRD+" (the CRD before the plural changed)", func() { iotAsStored = installPreviousIoT(ctx) })
	}, NodeTimeout(10*time.Minute))

	It("upgrades from the previous release to this one and the network keeps its claim and pod", func(ctx SpecContext) {
		Expect(operator).NotTo(BeNil(), "the install spec did not get that far")

		phase("before the upgrade, as docs/iot.md says: export the iot Deployments, delete "+oldIoTCRD, func() {
			iotExported = exportAndDeleteOldIoT(ctx)
		})

		phase("catalog with v"+nextVersion+" and opm restart", func() {
			next := filepath.Join(workDir, "bundle-"+nextVersion)
			newBundleVersion(next, nextVersion)
			dir := filepath.Join(workDir, "catalog-2")
			newCatalog(dir, []string{previous.bundle, next}, map[string]any{
				"name":      packageName + ".v" + nextVersion,
				"replaces":  packageName + ".v" + firstVersion,
				"skipRange": "<" + nextVersion,
			})
			opm.stop()
			opm.serve(dir)
		})

		phase("CSV v"+nextVersion+" Succeeded (upgrade)", func() {
			waitCSVSucceeded(ctx, nextVersion)
			Eventually(ctx, func() bool {
				err := k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: packageName + ".v" + firstVersion}, &operatorsv1alpha1.ClusterServiceVersion{})
				return client.IgnoreNotFound(err) == nil && err != nil
			}).Should(BeTrue(), "the replaced CSV v%s is never deleted", firstVersion)
		})

		phase("the bundle's PrometheusRule, ServiceMonitor and dashboards created by OLM", func() { expectBundleMonitoring(ctx) })

		phase("iot Deployments re-created under "+newIoTCRD+", which OLM installed", func() {
			recreateIoT(ctx, iotExported, iotAsStored)
		})

		phase("operator restart as the new Deployment", func() {
			old := leaseHolder(ctx)
			Expect(old).NotTo(BeEmpty(), "the first operator never held the leader election Lease")
			Expect(operator.stop()).To(Succeed())
			Expect(operator.checkGone()).To(Succeed())
			operator = runAsDeployment(ctx, nextVersion, operatorBin, false)
			Eventually(ctx, func() string { return leaseHolder(ctx) }).ShouldNot(Or(BeEmpty(), Equal(old)),
				"the new operator never took the leader election Lease; log:\n%s", operator.tail(30))
		})

		phase("network after the upgrade: the claim kept, the pod rolled once for the new default image", func() {
			// Prove the new operator reconciles the network with the upgraded RBAC: it must recreate a
			// deleted Service.
			svc := networkService(ctx)
			Expect(k8s.Delete(ctx, &svc)).To(Succeed())
			Eventually(ctx, func() types.UID { return networkServiceUID(ctx) }).ShouldNot(Or(BeEmpty(), Equal(svc.UID)),
				"the new operator never recreated the deleted Service; log:\n%s", operator.tail(30))
			// This release replaces the moving default ergo:stable (with datastore autoupgrade on) by a named
			// release with autoupgrade off (docs/ergonetwork.md): a network that names no image rolls once,
			// to exactly that image and the config digest of autoupgrade off, and nothing else changes.
			Eventually(ctx, func(g Gomega) {
				now := ergoDeployment(ctx)
				g.Expect(now.Spec.Template.Spec.Containers[0].Image).To(Equal(ergo.DefaultImage))
				was := ergoDep.Spec.DeepCopy()
				was.Template.Spec.Containers[0].Image = ergo.DefaultImage
				was.Template.Annotations = now.Spec.Template.Annotations
				g.Expect(cmp.Diff(*was, now.Spec)).To(BeEmpty(), "the upgrade changed more than the image and the config digest")
			}).Should(Succeed(), "operator log:\n%s", operator.tail(30))
			// The image comes from the operator, not the network's spec, so the network's generation does not
			// move and its Ready can still be the one from before the roll: wait for the roll to finish
			// first, or Ready below may pass on the old pod and turn False under Consistently.
			Eventually(ctx, func(g Gomega) {
				d := ergoDeployment(ctx)
				want := ptr.Deref(d.Spec.Replicas, 1)
				g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation), "the Deployment controller has not seen the roll")
				g.Expect([]int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas}).To(
					Equal([]int32{want, want, want}), "replicas, updated, available")
			}).Should(Succeed())
			Eventually(ctx, ready(ctx)).Should(Succeed(), "operator log:\n%s", operator.tail(30))
			settled := ergoDeployment(ctx)
			Expect(networkPod(ctx).UID).NotTo(Equal(podUID), "the rollout to the new image replaced the pod")
			Consistently(ctx, func(g Gomega) {
				now := ergoDeployment(ctx)
				g.Expect(now.Generation).To(Equal(settled.Generation), "the ergo Deployment changed again:\nspec %s\nannotations %s",
					cmp.Diff(settled.Spec, now.Spec), cmp.Diff(settled.Annotations, now.Annotations))
				ready(ctx)(g)
				g.Expect(networkPVC(ctx).UID).To(Equal(pvcUID), "the claim was replaced")
				for _, cs := range networkPod(ctx).Status.ContainerStatuses {
					g.Expect(cs.RestartCount).To(BeZero(), "container %s restarted", cs.Name)
				}
			}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
		})
	}, NodeTimeout(10*time.Minute))
})

// startOLM runs OLM's olm and catalog operators against the cluster, in namespace olm. Both serve health
// and metrics on the hard-coded :8080 (OLM has no flag for it): the second to start logs that the port is
// taken and carries on, which is harmless here.
func startOLM(ctx context.Context) {
	GinkgoHelper()
	createNamespace(ctx, olmNamespace)
	env := append(localcluster.FilterEnv(os.Environ(), "KUBECONFIG", "OPERATOR_NAMESPACE"),
		"KUBECONFIG="+cluster.KubeconfigPath(), "OPERATOR_NAMESPACE="+olmNamespace)
	common := []string{"--namespace", olmNamespace, "--writeStatusName", ""}
	olm := startProc("olm", filepath.Join(olmBin, "olm"), common, env)
	cat := startProc("catalog", filepath.Join(olmBin, "catalog"), append(common, "--kubeconfig", cluster.KubeconfigPath()), env)
	// Nothing to probe but that both keep running.
	Consistently(func(g Gomega) {
		for _, p := range []*proc{olm, cat} {
			done, err := p.exited()
			g.Expect(done).To(BeFalse(), func() string { return fmt.Sprintf("%s exited: %v\n%s", p.name, err, p.tail(20)) })
		}
	}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

func waitCatalogReady(ctx context.Context) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		cs := &operatorsv1alpha1.CatalogSource{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: olmNamespace, Name: catalogName}, cs)).To(Succeed())
		g.Expect(cs.Status.GRPCConnectionState).NotTo(BeNil(), "no connection state yet")
		g.Expect(cs.Status.GRPCConnectionState.LastObservedState).To(Equal("READY"))
	}).Should(Succeed())
}

// waitCSVSucceeded waits for the CSV of version to reach Succeeded in the install namespace.
func waitCSVSucceeded(ctx context.Context, version string) {
	GinkgoHelper()
	name := packageName + ".v" + version
	Eventually(ctx, func(g Gomega) {
		csv := &operatorsv1alpha1.ClusterServiceVersion{}
		err := k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: name}, csv)
		if err != nil {
			sub := &operatorsv1alpha1.Subscription{}
			_ = k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: packageName}, sub)
			g.Expect(err).NotTo(HaveOccurred(), "subscription state %q current %q installed %q conditions %+v",
				sub.Status.State, sub.Status.CurrentCSV, sub.Status.InstalledCSV, sub.Status.Conditions)
		}
		g.Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded), "CSV %s: %s: %s", name, csv.Status.Reason, csv.Status.Message)
	}).WithTimeout(4 * time.Minute).Should(Succeed())
}

// runAsDeployment runs binary (beforeWebhooks: a release without the webhook flags) as the pod of the Deployment OLM made for the CSV of version
// would run: the container's args and env (field references resolved against that pod), authenticated as
// the pod's ServiceAccount with a token from the TokenRequest API, so the bundle's RBAC is what it has, and
// with metrics served as the pod serves them (HTTPS, authorized through the API server). StartOperator
// moves the listen addresses to free ports on 127.0.0.1 and gives the leader election namespace, which a
// pod reads from its ServiceAccount mount, as a flag.
func runAsDeployment(ctx context.Context, version, binary string, beforeWebhooks bool) *proc {
	GinkgoHelper()
	name := "v" + version
	var dep appsv1.Deployment
	var pod corev1.Pod
	Eventually(ctx, func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: deploymentName}, &dep)).To(Succeed())
		g.Expect(dep.Status.ObservedGeneration).To(Equal(dep.Generation))
		g.Expect(dep.Status.UpdatedReplicas).To(Equal(dep.Status.Replicas))
		g.Expect(dep.Status.AvailableReplicas).To(BeNumerically(">=", 1))
		sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
		g.Expect(err).NotTo(HaveOccurred())
		var pods corev1.PodList
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(installNamespace), client.MatchingLabelsSelector{Selector: sel})).To(Succeed())
		var current []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				current = append(current, p)
			}
		}
		g.Expect(current).To(HaveLen(1), "running pods of the Deployment")
		pod = current[0]
	}).Should(Succeed())

	c := dep.Spec.Template.Spec.Containers[0]
	local := emptyDirsOf(dep.Spec.Template.Spec, c)
	var args []string
	var le *localcluster.LeaderElection
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="), strings.HasPrefix(a, "--metrics-bind-address="):
			continue // StartOperator's free ports instead
		case strings.HasPrefix(a, "--webhook-cert-dir="):
			continue // where OLM mounts the certificate in the pod: StartOperator's certificate directory instead
		case a == "--leader-elect" || a == "--leader-elect=true":
			le = &localcluster.LeaderElection{Namespace: installNamespace}
			continue
		}
		args = append(args, local.Replace(a))
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+local.Replace(envValue(pod, e)))
	}
	Expect(env).To(ContainElement("WATCH_NAMESPACE="+installNamespace), "OLM's olm.targetNamespaces reaches the operator")
	fmt.Fprintf(os.Stdout, "olm: operator %s runs as ServiceAccount %s with args %v and env %v\n", name, pod.Spec.ServiceAccountName, c.Args, c.Env)

	op, err := localcluster.StartOperator(ctx, localcluster.OperatorOptions{
		Binary:         binary,
		NoWebhookFlags: beforeWebhooks,
		Kubeconfig:     serviceAccountKubeconfig(ctx, pod.Spec.ServiceAccountName, "operator-"+name),
		Name:           name,
		LogDir:         logDir,
		Args:           args,
		Env:            env,
		SecureMetrics:  true,
		LeaderElection: le,
		ReadyTimeout:   90 * time.Second,
		StopTimeout:    20 * time.Second,
	})
	Expect(err).NotTo(HaveOccurred(), "operator %s", name)
	return track(&proc{Child: op.Child, name: "operator " + name, logPath: op.LogPath, addrs: op.Addresses()})
}

// emptyDirsOf plays the kubelet's part for c's emptyDir mounts: each mount path is replaced, in args and
// env, by a directory of the test's own (the operator's cache volume holds TMPDIR, HOME and Helm's homes).
func emptyDirsOf(spec corev1.PodSpec, c corev1.Container) *strings.Replacer {
	GinkgoHelper()
	empty := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			empty[v.Name] = true
		}
	}
	var pairs []string
	for _, m := range c.VolumeMounts {
		if empty[m.Name] {
			pairs = append(pairs, m.MountPath, GinkgoT().TempDir())
		}
	}
	return strings.NewReplacer(pairs...)
}

// envValue is what the kubelet would give the container for e in pod.
func envValue(pod corev1.Pod, e corev1.EnvVar) string {
	GinkgoHelper()
	if e.ValueFrom == nil {
		return e.Value
	}
	Expect(e.ValueFrom.FieldRef).NotTo(BeNil(), "env %s: only fieldRef is supported here", e.Name)
	path := e.ValueFrom.FieldRef.FieldPath
	switch {
	case strings.HasPrefix(path, "metadata.annotations['"):
		return pod.Annotations[strings.TrimSuffix(strings.TrimPrefix(path, "metadata.annotations['"), "']")]
	case strings.HasPrefix(path, "metadata.labels['"):
		return pod.Labels[strings.TrimSuffix(strings.TrimPrefix(path, "metadata.labels['"), "']")]
	case path == "metadata.namespace":
		return pod.Namespace
	case path == "metadata.name":
		return pod.Name
	case path == "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	}
	Fail(fmt.Sprintf("env %s: field path %s is not supported here", e.Name, path))
	return ""
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the ServiceAccount with a token
// from the TokenRequest API.
func serviceAccountKubeconfig(ctx context.Context, sa, name string) string {
	GinkgoHelper()
	Expect(sa).NotTo(BeEmpty())
	cs, err := kubernetes.NewForConfig(cluster.Config())
	Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(installNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	cfg := cluster.Config()
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		ca, err = os.ReadFile(cfg.CAFile)
		Expect(err).NotTo(HaveOccurred())
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: sa, Namespace: installNamespace}
	kc.CurrentContext = "local"
	path := filepath.Join(workDir, name+".kubeconfig")
	Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

func ready(ctx context.Context) func(Gomega) {
	return func(g Gomega) {
		n := &ircv1.ErgoNetwork{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: networkName}, n)).To(Succeed())
		g.Expect(n.Status.ObservedGeneration).To(Equal(n.Generation), "status.observedGeneration")
		cond := meta.FindStatusCondition(n.Status.Conditions, ircv1.ConditionReady)
		g.Expect(cond).NotTo(BeNil(), "no Ready condition yet")
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "Ready is %s: %s: %s", cond.Status, cond.Reason, cond.Message)
	}
}

var networkLabels = client.MatchingLabels{"app.kubernetes.io/instance": networkName}

// networkChild lists the network's objects of list's kind into list, expects exactly one and returns it
// (T is the list's item type).
func networkChild[T any](ctx context.Context, list client.ObjectList) T {
	GinkgoHelper()
	Expect(k8s.List(ctx, list, client.InNamespace(installNamespace), networkLabels)).To(Succeed())
	Expect(meta.LenList(list)).To(Equal(1), "%T of the network", list)
	items, err := meta.ExtractList(list)
	Expect(err).NotTo(HaveOccurred())
	item, ok := any(items[0]).(*T)
	Expect(ok).To(BeTrue(), "%T holds %T", list, items[0])
	return *item
}

func networkPVC(ctx context.Context) corev1.PersistentVolumeClaim {
	return networkChild[corev1.PersistentVolumeClaim](ctx, &corev1.PersistentVolumeClaimList{})
}

func networkPod(ctx context.Context) corev1.Pod {
	return networkChild[corev1.Pod](ctx, &corev1.PodList{})
}

func ergoDeployment(ctx context.Context) appsv1.Deployment {
	return networkChild[appsv1.Deployment](ctx, &appsv1.DeploymentList{})
}

func networkService(ctx context.Context) corev1.Service {
	return networkChild[corev1.Service](ctx, &corev1.ServiceList{})
}

// networkServiceUID is the UID of the network's Service, empty while it does not exist.
func networkServiceUID(ctx context.Context) types.UID {
	var l corev1.ServiceList
	if err := k8s.List(ctx, &l, client.InNamespace(installNamespace), networkLabels); err != nil || len(l.Items) != 1 {
		return ""
	}
	return l.Items[0].UID
}

// leaseHolder is the holder of the operator's leader election Lease, empty when nobody holds it.
func leaseHolder(ctx context.Context) string {
	l := &coordinationv1.Lease{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: manager.LeaderElectionID}, l); err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}
