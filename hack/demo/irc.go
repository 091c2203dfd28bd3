package main

import (
	"context"
	"fmt"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// The ErgoNetwork scenario: the sample network and its oper Secret are applied; kube-controller-manager,
// kube-scheduler and kwok run its Deployment's pod; the demo plays cert-manager for its Certificate.
func init() {
	register(Scenario{
		Name:    "irc",
		Title:   "ErgoNetwork, an IRC network run by ergo (irc.josie.cloud/v1alpha1)",
		Samples: []string{"extras/my-network-oper.yaml", "irc_v1alpha1_ergonetwork.yaml"},
		Follow:  ircv1.GroupVersion.WithKind("ErgoNetwork"),
		Steps:   ircSteps,
		Show:    ircShow,
		Kubectl: func(obj client.Object) []string {
			return []string{
				"get ergonetworks,deployments,pods,services,configmaps,pvc,certificates,routes -o wide",
				"describe ergonetwork " + obj.GetName(),
			}
		},
	})
}

// ircChildKinds are the kinds of what the operator makes for a network.
var ircChildKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
	cmv1.SchemeGroupVersion.WithKind("Certificate"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	routev1.GroupVersion.WithKind("Route"),
}

// ircSteps follow the network to Ready: the operator reconciles it; the Deployment becomes Available
// because kube-controller-manager, kube-scheduler and kwok run its pod; the Certificate becomes Ready
// because the demo plays cert-manager, which does not run here.
func ircSteps(obj client.Object) []Step {
	en := obj.(*ircv1.ErgoNetwork)
	steps := []Step{
		WaitFor(fmt.Sprintf("Waiting for the operator to reconcile ErgoNetwork %s/%s", en.Namespace, en.Name), Reconciled),
		DeploymentAvailable("ergo", ircv1.ConditionDeployment),
	}
	if en.Spec.TLS != nil {
		steps = append(steps, Play(playCertManager))
	}
	return steps
}

// playCertManager marks the network's Certificate Ready, as cert-manager does once it has issued it.
func playCertManager(ctx context.Context, e *Env, obj client.Object) error {
	en := obj.(*ircv1.ErgoNetwork)
	return playCertificateReady(ctx, e, en.Namespace, ergo.CertificateName(en), ergo.TLSSecretName(en))
}

// ircShow prints what a user would look at: the network like kubectl get, its conditions, what it owns,
// its pod, the rendered ircd.yaml and its events, then what Ready says.
func ircShow(ctx context.Context, e *Env, obj client.Object) {
	en := obj.(*ircv1.ErgoNetwork)
	e.Step("ErgoNetworks (like kubectl get ergonetworks -n %s)", en.Namespace)
	ready := readyStatus(en.Status.Conditions)
	e.Table([]string{"NAME", "HOSTNAME", "NETWORK", "READY", "AGE"}, [][]string{{
		en.Name, en.Spec.Hostname, en.Status.NetworkName, ready, Age(en.CreationTimestamp.Time),
	}})
	e.Conditions("ErgoNetwork", en, en.Status.Conditions)
	e.Children(ctx, e.Client, en, ircChildKinds)
	e.Pods(ctx, e.Client, en, map[string]string{"app.kubernetes.io/instance": en.Name})
	ircShowConfig(ctx, e, en)
	e.Events(ctx, e.Client, "ErgoNetwork", en)
	ircExplainReady(e, en)
}

func ircShowConfig(ctx context.Context, e *Env, en *ircv1.ErgoNetwork) {
	name := ergo.ConfigMapName(en)
	e.Step("ircd.yaml in ConfigMap %s", name)
	var cm corev1.ConfigMap
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: en.Namespace, Name: name}, &cm); err != nil {
		e.Printf("(not there: %v)", err)
		return
	}
	cfg, ok := cm.Data["ircd.yaml"]
	if !ok {
		e.Printf("(the ConfigMap has no ircd.yaml key)")
		return
	}
	e.Text(cfg)
}

// ircExplainReady says what Ready means here, or what to look at when the network did not become Ready.
func ircExplainReady(e *Env, en *ircv1.ErgoNetwork) {
	cond := meta.FindStatusCondition(en.Status.Conditions, ircv1.ConditionReady)
	switch {
	case !e.OperatorRuns():
		e.Blank()
		e.Printf("No operator ran (-skip-operator), so the network has no status and no children.")
		return
	case cond != nil && cond.Status == metav1.ConditionTrue:
		e.Blank()
		e.Printf("Ready is True: ergo's pod runs on the fake node %s and every part the spec asks for is in place.",
			localcluster.DefaultNodeName)
		return
	case cond == nil:
		e.Blank()
		e.Printf("The network has no Ready condition: the operator has not written a status (see its log).")
		return
	}
	e.Blank()
	e.Printf("Ready is %s (%s): %s", cond.Status, cond.Reason, cond.Message)
	e.Printf("The operator's log and the cluster's logs in bin/demo/ say more.")
}
