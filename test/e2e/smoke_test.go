//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

var _ = Describe("ErgoNetwork", func() {
	It("smoke: the reference network gets every child with the right spec and becomes Ready", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		ensureStorageClass(ctx, ergotest.ReferenceStorageClass)
		startOperator("smoke", operatorConfig{namespace: ns})

		secret := ergotest.OperSecret(ns, "my-network-oper", "reference-password")
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		hash := string(secret.Data["password"])
		n := ergotest.ReferenceNetwork(ns)
		Expect(k8s.Create(ctx, n)).To(Succeed())
		key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

		By("the ConfigMap holds exactly the reference ircd.yaml, without the oper's hash")
		golden, err := os.ReadFile(filepath.Join(repoRoot, "internal", "irc", "ergo", "testdata", "reference.golden.yaml"))
		Expect(err).NotTo(HaveOccurred())
		cm := &corev1.ConfigMap{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key("my-network-config"), cm)).To(Succeed())
			controlledBy(g, cm, n)
		}).Should(Succeed())
		ircd := cm.Data["ircd.yaml"]
		Expect(ircd).To(Equal(string(golden)), "ConfigMap my-network-config differs from internal/irc/ergo/testdata/reference.golden.yaml")
		Expect(ircd).NotTo(ContainSubstring(hash))
		var conf struct {
			Network struct{ Name string } `json:"network"`
			Server  struct {
				Name      string                    `json:"name"`
				Listeners map[string]map[string]any `json:"listeners"`
			} `json:"server"`
			Opers                     map[string]map[string]any `json:"opers"`
			AllowEnvironmentOverrides bool                      `json:"allow-environment-overrides"`
		}
		Expect(yaml.Unmarshal([]byte(ircd), &conf)).To(Succeed())
		Expect(conf.Network.Name).To(Equal("MyNetwork"))
		Expect(conf.Server.Name).To(Equal("my-network.irc.now"))
		Expect(conf.Server.Listeners).To(HaveKey(":6697"))
		Expect(conf.Server.Listeners[":6697"]).To(HaveKey("tls"))
		Expect(conf.Server.Listeners).To(HaveKey(":6667"))
		Expect(conf.Server.Listeners[":6667"]).NotTo(HaveKey("tls"))
		Expect(conf.Opers).To(HaveKey("admin"))
		Expect(conf.AllowEnvironmentOverrides).To(BeTrue(), "the oper hash arrives through the environment")

		By("the PersistentVolumeClaim asks for the class and size, and kube-controller-manager binds it")
		pvc := &corev1.PersistentVolumeClaim{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key("my-network-data"), pvc)).To(Succeed())
			controlledBy(g, pvc, n)
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		}).Should(Succeed())
		Expect(pvc.Spec.StorageClassName).To(Equal(ptr.To(ergotest.ReferenceStorageClass)))
		Expect(pvc.Spec.AccessModes).To(ConsistOf(corev1.ReadWriteOnce))
		Expect(pvc.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("1Gi"))).To(BeZero())

		By("the Certificate names the issuer, the DNS names and the TLS Secret")
		cert := &cmv1.Certificate{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key("my-network"), cert)).To(Succeed())
			controlledBy(g, cert, n)
		}).Should(Succeed())
		Expect(cert.Spec.SecretName).To(Equal("my-network-tls"))
		Expect(cert.Spec.DNSNames).To(Equal([]string{"my-network.irc.now"}))
		Expect(cert.Spec.IssuerRef.Name).To(Equal("letsencrypt-prod"))
		Expect(cert.Spec.IssuerRef.Kind).To(Equal("ClusterIssuer"))
		Expect(cert.Spec.IssuerRef.Group).To(Equal("cert-manager.io"))

		By("the Deployment runs ergo from RELATED_IMAGE_ERGO with the config, certificate, claim and oper hash")
		dep := &appsv1.Deployment{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key("my-network"), dep)).To(Succeed())
			controlledBy(g, dep, n)
		}).Should(Succeed())
		Expect(dep.Spec.Replicas).To(Equal(ptr.To[int32](1)))
		Expect(dep.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
		Expect(dep.Spec.Template.Annotations).To(HaveKeyWithValue(ergo.ConfigDigestAnnotation, Not(BeEmpty())))
		Expect(dep.Spec.Template.Annotations).NotTo(HaveKey(ergo.LegacyConfigDigestAnnotation), "a new network carries the digest under the one annotation domain only")
		pod := dep.Spec.Template.Spec
		Expect(pod.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
		Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		Expect(pod.Containers).To(HaveLen(1))
		container := pod.Containers[0]
		Expect(container.Image).To(Equal(ergoImage))
		Expect(container.Ports).To(ConsistOf(
			corev1.ContainerPort{Name: "ircs-6697", ContainerPort: 6697, Protocol: corev1.ProtocolTCP},
			corev1.ContainerPort{Name: "irc-6667", ContainerPort: 6667, Protocol: corev1.ProtocolTCP},
		))
		Expect(container.Env).To(ContainElement(corev1.EnvVar{
			Name: "ERGO__OPERS__ADMIN__PASSWORD",
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "my-network-oper"}, Key: "password",
			}},
		}))
		Expect(container.Resources.Requests.Cpu().String()).To(Equal("50m"))
		Expect(container.Resources.Limits.Memory().String()).To(Equal("256Mi"))
		Expect(container.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
		Expect(container.SecurityContext.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
		var sources []string
		var claim string
		for _, v := range pod.Volumes {
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					switch {
					case s.ConfigMap != nil:
						sources = append(sources, "configmap/"+s.ConfigMap.Name)
					case s.Secret != nil:
						sources = append(sources, "secret/"+s.Secret.Name)
					}
				}
			}
			if v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		Expect(sources).To(ConsistOf("configmap/my-network-config", "secret/my-network-tls"))
		Expect(claim).To(Equal("my-network-data"))

		By("the Service exposes both listeners")
		svc := &corev1.Service{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key("my-network"), svc)).To(Succeed())
			controlledBy(g, svc, n)
		}).Should(Succeed())
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		var ports []string
		for _, p := range svc.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%s=%d->%s", p.Name, p.Port, p.TargetPort.String()))
		}
		Expect(ports).To(ConsistOf("ircs-6697=6697->ircs-6697", "irc-6667=6667->irc-6667"))
		Expect(svc.Spec.Selector).To(Equal(dep.Spec.Selector.MatchLabels))

		By("the Route passes TLS through to the TLS listener")
		route := &routev1.Route{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key("my-network"), route)).To(Succeed())
			controlledBy(g, route, n)
		}).Should(Succeed())
		Expect(route.Spec.Host).To(Equal("my-network.irc.now"))
		Expect(route.Spec.To.Kind).To(Equal("Service"))
		Expect(route.Spec.To.Name).To(Equal("my-network"))
		Expect(route.Spec.Port.TargetPort).To(Equal(intstr.FromString("ircs-6697")))
		Expect(route.Spec.TLS.Termination).To(Equal(routev1.TLSTerminationPassthrough))

		By("the Deployment becomes Available for real (deployment controller, scheduler, kwok); Ready waits for the Certificate")
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key("my-network"), dep)).To(Succeed())
			deploymentAvailable(g, dep)
			got, err := getNetwork(ctx, ns, "my-network")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, ircv1.ConditionDeployment)).To(BeTrue(), "DeploymentAvailable: %+v", got.Status.Conditions)
			ready := meta.FindStatusCondition(got.Status.Conditions, ircv1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(ircv1.ReasonCertificatePending))
		}).WithTimeout(90 * time.Second).Should(Succeed())
		pods := podsOf(ctx, ns, "my-network")
		Expect(pods).To(HaveLen(1))
		Expect(pods[0].Spec.NodeName).To(Equal(localcluster.DefaultNodeName))
		Expect(pods[0].Status.Phase).To(Equal(corev1.PodRunning))

		By("playing cert-manager (none runs here): the Certificate is marked Ready")
		markCertificateReady(ctx, ns, "my-network")
		Eventually(ctx, converged(ctx, ns, "my-network")).Should(Succeed())
		got, err := getNetwork(ctx, ns, "my-network")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.NetworkName).To(Equal("MyNetwork"))
		Expect(got.Status.ServiceHost).To(Equal("my-network." + ns + ".svc"))
		Expect(got.Status.RouteHost).To(Equal("my-network.irc.now"))
		Expect(got.Status.Ports).To(ConsistOf(
			ircv1.ListenerStatus{Name: "ircs-6697", Port: 6697, TLS: true},
			ircv1.ListenerStatus{Name: "irc-6667", Port: 6667},
		))
		for _, c := range got.Status.Conditions {
			Expect(c.Status).To(Equal(metav1.ConditionTrue), "condition %s: %s", c.Type, c.Message)
		}

		By("the operator told the user what it made")
		var events corev1.EventList
		Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		// Each reconcile that created children names them all in one event: "Created Kind name, Kind name".
		var created []string
		for _, e := range events.Items {
			if e.InvolvedObject.UID == n.UID && e.Reason == "Created" {
				created = append(created, strings.Split(strings.TrimPrefix(e.Message, "Created "), ", ")...)
			}
		}
		Expect(created).To(ConsistOf(
			"ConfigMap my-network-config", "Deployment my-network", "Service my-network",
			"PersistentVolumeClaim my-network-data", "Certificate my-network", "Route my-network",
		))
		Expect(slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Type == corev1.EventTypeWarning && e.InvolvedObject.UID == n.UID })).
			To(BeFalse(), "no Warning events for a valid network")
	})
})
