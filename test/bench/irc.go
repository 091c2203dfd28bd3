package main

import (
	"context"
	"fmt"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// The ErgoNetwork workload: networks of the sample's shape, each with six children.

func init() { register(ircWorkload{}) }

type ircWorkload struct{}

// ergoImage is the ergo image the operator is told to use (RELATED_IMAGE_ERGO) and the floor's Deployments
// carry: nothing pulls it, there is no kubelet.
const ergoImage = "registry.example/ergochat/ergo:bench"

// ircChildren are the kinds of a network's children, in the order the report names them.
var ircChildren = []string{"ConfigMap", "PersistentVolumeClaim", "Deployment", "Service", "Certificate", "Route"}

func (ircWorkload) Info() Info {
	return Info{
		Name: "irc", Kind: "ErgoNetwork", Resource: "ergonetworks",
		Noun: "network", Nouns: "networks",
		Controllers:  []string{"ergonetwork"},
		Children:     ircChildren,
		StatusWrites: 1,
		OperatorEnv:  []string{"RELATED_IMAGE_ERGO=" + ergoImage},
		Shape: fmt.Sprintf("A network is the sample's shape: TLS and plaintext listeners, an oper Secret, a cert-manager "+
			"Certificate, a Route, storage and resources, so it has %d children: %s. Its oper Secret and the TLS Secret "+
			"cert-manager would write exist before the clock starts (there is no cert-manager).",
			len(ircChildren), strings.Join(ircChildren, ", ")),
		EditDoes:    "`spec.networkName` of one network after another is merge-patched",
		EditWritten: "config written",
		EditStages: "*Config written* is the edit to the ConfigMap holding the new ircd.yaml; *applied* to the " +
			"Deployment's pod template carrying the new config digest (what restarts ergo with it), both seen through a watch.",
	}
}

func (w ircWorkload) Kinds() []client.Object {
	net := w.network(benchNamespace, 0)
	return []client.Object{net, ergo.PVC(net), ergo.Certificate(net), ergo.ConfigMap(net, nil),
		ergo.Deployment(net, ergo.Options{}, ""), ergo.Service(net), ergo.Route(net), operSecret(benchNamespace, 0)}
}

func (ircWorkload) ObjectName(i int) string { return fmt.Sprintf("net-%05d", i) }

// network is the bench's ErgoNetwork: ergotest.FullNetwork (plaintext and TLS listeners, a cert-manager
// certificate, a Route, an oper Secret, storage and resources, so all six children) as the bench has
// always measured it: network name Bench, issuer bench, a Route without a host, no CPU limit.
func (w ircWorkload) network(namespace string, i int) *ircv1.ErgoNetwork {
	name := w.ObjectName(i)
	n := ergotest.FullNetwork(namespace, name, name+".bench.example")
	n.Spec.NetworkName = "Bench"
	n.Spec.TLS.IssuerRef.Name = "bench"
	n.Spec.Route = &ircv1.RouteSpec{}
	delete(n.Spec.Resources.Limits, corev1.ResourceCPU)
	return n
}

// operHash is every bench network's oper password hash: one bcrypt for all, so that preparing thousands
// of networks costs no CPU the runs would feel.
var operHash = ergotest.OperHash("bench")

// operSecret is network i's oper Secret, the user's.
func operSecret(namespace string, i int) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ircWorkload{}.ObjectName(i) + "-oper"},
		Data:       map[string][]byte{ircv1.DefaultOperSecretKey: operHash},
	}
}

// tlsCert stands for the certificate cert-manager would issue: the operator only hashes it.
var tlsCert = func() []byte {
	b := []byte("-----BEGIN CERTIFICATE-----\n")
	for i := range 1200 {
		b = append(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i%64])
		if i%64 == 63 {
			b = append(b, '\n')
		}
	}
	return append(b, "\n-----END CERTIFICATE-----\n"...)
}()

// tlsSecret is the Secret cert-manager writes for a network's Certificate, labelled through the
// Certificate's secretTemplate: in a cluster with cert-manager it exists moments after the Certificate.
func (w ircWorkload) tlsSecret(namespace string, i int) *corev1.Secret {
	net := w.network(namespace, i)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ergo.TLSSecretName(net), Labels: ergo.Labels(net)},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: tlsCert, corev1.TLSPrivateKeyKey: []byte("key")},
	}
}

// Prepare creates network i's oper Secret and the TLS Secret cert-manager would have written.
func (w ircWorkload) Prepare(ctx context.Context, c client.Client, namespace string, i int) error {
	if err := c.Create(ctx, operSecret(namespace, i)); err != nil {
		return err
	}
	return c.Create(ctx, w.tlsSecret(namespace, i))
}

func (w ircWorkload) Create(ctx context.Context, c client.Client, namespace string, i int) error {
	return c.Create(ctx, w.network(namespace, i))
}

// Floor creates network i, its six children as the operator builds them, and its status.
func (w ircWorkload) Floor(ctx context.Context, c client.Client, namespace string, i int) error {
	net := w.network(namespace, i)
	if err := c.Create(ctx, net); err != nil {
		return err
	}
	cfg := ergo.BuildConfig(net, true)
	rendered, err := ergo.RenderConfig(cfg)
	if err != nil {
		return err
	}
	configMap, err := ergo.SourcedConfigMap(net, cfg, rendered)
	if err != nil {
		return err
	}
	children := []client.Object{
		ergo.PVC(net),
		ergo.Certificate(net),
		configMap,
		ergo.Deployment(net, ergo.Options{Image: ergoImage}, ergo.ConfigDigest(rendered, operHash, tlsCert)),
		ergo.Service(net),
		ergo.Route(net),
	}
	for _, child := range children {
		if err := c.Create(ctx, child); err != nil {
			return fmt.Errorf("floor: create %T %s: %w", child, child.GetName(), err)
		}
	}
	net.Status = ircv1.ErgoNetworkStatus{
		ObservedGeneration: net.Generation,
		NetworkName:        net.Spec.NetworkName,
		Conditions: []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionFalse, Reason: "DeploymentPending",
			Message: "floor", LastTransitionTime: metav1.Now(), ObservedGeneration: net.Generation,
		}},
	}
	return c.Status().Update(ctx, net)
}

// churnMarker is the network name edit seq gives: the ircd.yaml that carries it is the edit written.
func churnMarker(seq int) string { return fmt.Sprintf("Churn%06d", seq) }

// Edit merge-patches spec.networkName, as kubectl patch would.
func (w ircWorkload) Edit(ctx context.Context, c client.Client, namespace string, i, seq int) error {
	patch := fmt.Appendf(nil, `{"spec":{"networkName":%q}}`, churnMarker(seq))
	obj := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: w.ObjectName(i)}}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

func (ircWorkload) NewObserver() Observer { return &ircObserver{nets: map[string]*ircState{}} }

// Child kinds a network has, as bits of ircState.kinds.
const (
	kindConfigMap uint8 = 1 << iota
	kindPVC
	kindDeployment
	kindService
	kindCertificate
	kindRoute
	allKinds = kindConfigMap | kindPVC | kindDeployment | kindService | kindCertificate | kindRoute
)

// ircObserver follows networks through a watch of them and their children.
type ircObserver struct {
	nets map[string]*ircState
}

type ircState struct {
	kinds                uint8 // children seen
	generation, observed int64
	config               string // the ConfigMap's ircd.yaml
	digest               string // the Deployment's pod-template config digest
	marker               string // the network name the edit under way sets
	digestBefore         string // the digest before it
}

func (o *ircObserver) Watches() []Watch {
	managed := oplabels.ManagedSelector()
	return []Watch{
		{Object: &ircv1.ErgoNetwork{}},
		{Object: &corev1.ConfigMap{}, Selector: managed},
		{Object: &corev1.PersistentVolumeClaim{}, Selector: managed},
		{Object: &appsv1.Deployment{}, Selector: managed},
		{Object: &corev1.Service{}, Selector: managed},
		{Object: &cmv1.Certificate{}, Selector: managed},
		{Object: &routev1.Route{}, Selector: managed},
	}
}

func (o *ircObserver) Observe(obj client.Object) Progress {
	var s *ircState
	name := obj.GetName()
	if n, ok := obj.(*ircv1.ErgoNetwork); ok {
		s = entry(o.nets, name)
		s.generation, s.observed = n.Generation, n.Status.ObservedGeneration
	} else {
		if name = obj.GetLabels()[oplabels.InstanceLabel]; name == "" {
			return Progress{}
		}
		s = entry(o.nets, name)
		switch obj := obj.(type) {
		case *corev1.ConfigMap:
			s.kinds |= kindConfigMap
			s.config = obj.Data[ergo.ConfigKey]
		case *corev1.PersistentVolumeClaim:
			s.kinds |= kindPVC
		case *appsv1.Deployment:
			s.kinds |= kindDeployment
			s.digest = obj.Spec.Template.Annotations[ergo.ConfigDigestAnnotation]
		case *corev1.Service:
			s.kinds |= kindService
		case *cmv1.Certificate:
			s.kinds |= kindCertificate
		case *routev1.Route:
			s.kinds |= kindRoute
		}
	}
	written := s.marker != "" && strings.Contains(s.config, s.marker)
	return Progress{
		Name:      name,
		Converged: s.kinds == allKinds && s.generation > 0 && s.observed == s.generation,
		Written:   written,
		Applied:   written && s.digest != s.digestBefore,
	}
}

func (o *ircObserver) StartEdit(name string, seq int) {
	s := entry(o.nets, name)
	s.marker, s.digestBefore = churnMarker(seq), s.digest
}
