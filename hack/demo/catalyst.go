package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
)

// The catalyst scenario: the team and project namespaces, the sample Project and its pull-request
// Environment are applied; the operator makes the environment's namespace, locks it down and asks
// cert-manager for its certificate, which the demo plays; once Ready with its URL, the Environment is
// deleted, and kube-controller-manager's namespace controller removes the namespace before the operator
// lets the Environment go.
func init() {
	register(Scenario{
		Name:    "catalyst",
		Title:   "Project and Environment, a locked-down namespace per preview environment (catalyst.catalyst.dev/v1alpha1)",
		Samples: []string{"extras/catalyst-namespaces.yaml", "catalyst_v1alpha1_project.yaml", "catalyst_v1alpha1_environment.yaml"},
		Follow:  catalystv1.GroupVersion.WithKind("Environment"),
		Steps: func(obj client.Object) []Step {
			return []Step{
				WaitFor(fmt.Sprintf("Waiting for Environment %s/%s to get its namespace (quota, limits, network policy)",
					obj.GetNamespace(), obj.GetName()), ConditionTrue(catalystv1.ConditionNamespaceReady)),
				Play(playCatalystCertManager),
			}
		},
		Show: catalystShow,
		Kubectl: func(obj client.Object) []string {
			return []string{
				"get projects,environments -A -o wide",
				"describe environment -n " + obj.GetNamespace() + " " + obj.GetName(),
			}
		},
	})
}

// playCatalystCertManager marks the environment's Certificate Ready, as cert-manager does once issued.
func playCatalystCertManager(ctx context.Context, e *Env, obj client.Object) error {
	env := &catalystv1.Environment{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), env); err != nil {
		return err
	}
	ns := env.Status.Namespace
	e.Step("Playing cert-manager: no cert-manager runs in this local cluster, so the demo itself marks "+
		"Certificate %s/%s Ready", ns, catalyst.CertificateName)
	e.Printf("(on a real cluster, cert-manager issues the certificate into Secret %s and sets this condition)", catalyst.TLSSecretName)
	if err := catalysttest.MarkCertificateReady(ctx, e.Client, ns, catalyst.CertificateName); err != nil {
		return fmt.Errorf("mark Certificate %s/%s Ready: %w", ns, catalyst.CertificateName, err)
	}
	return nil
}

// catalystShow prints the Environment like kubectl get, its conditions, its namespace and what is in it,
// its events; then deletes it and follows the deletion.
func catalystShow(ctx context.Context, e *Env, obj client.Object) {
	env := obj.(*catalystv1.Environment)
	e.Step("Environments (like kubectl get environments -n %s)", env.Namespace)
	e.Table([]string{"NAME", "PROJECT", "TYPE", "PHASE", "URL", "NAMESPACE"}, [][]string{{
		env.Name, env.Spec.ProjectRef.Name, string(env.Spec.Type), string(env.Status.Phase), env.Status.URL, env.Status.Namespace,
	}})
	e.Conditions("Environment", env, env.Status.Conditions)
	ns := env.Status.Namespace
	if ns == "" {
		e.Printf("The Environment has no namespace: see NamespaceReady above and the operator's log.")
		return
	}
	catalystShowNamespace(ctx, e, ns)
	e.Events(ctx, e.Client, "Environment", env)
	if !e.OperatorRuns() || !meta.IsStatusConditionTrue(env.Status.Conditions, catalystv1.ConditionReady) {
		return
	}
	catalystDelete(ctx, e, env, ns)
}

func catalystShowNamespace(ctx context.Context, e *Env, ns string) {
	n := &corev1.Namespace{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		e.Printf("(namespace %s: %v)", ns, err)
		return
	}
	e.Step("Namespace %s: labels and annotations", ns)
	var rows [][]string
	for kind, m := range map[string]map[string]string{"label": n.Labels, "annotation": n.Annotations} {
		var keys []string
		for k := range m {
			if !strings.HasPrefix(k, "kubernetes.io/") && !strings.HasSuffix(k, "applied-digest") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			rows = append(rows, []string{kind, k, m[k]})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i][0] > rows[j][0] }) // labels first
	e.Table([]string{"", "KEY", "VALUE"}, rows)

	e.Step("What the operator made in namespace %s", ns)
	rows = nil
	rq := &corev1.ResourceQuota{}
	if e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.QuotaName}, rq) == nil {
		rows = append(rows, []string{"ResourceQuota/" + rq.Name, fmt.Sprintf("requests.cpu=%s limits.memory=%s",
			rq.Spec.Hard.Name(corev1.ResourceRequestsCPU, ""), rq.Spec.Hard.Name(corev1.ResourceLimitsMemory, ""))})
	}
	lr := &corev1.LimitRange{}
	if e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.QuotaName}, lr) == nil && len(lr.Spec.Limits) > 0 {
		l := lr.Spec.Limits[0]
		rows = append(rows, []string{"LimitRange/" + lr.Name, fmt.Sprintf("container defaults: request %s/%s, limit %s/%s",
			l.DefaultRequest.Cpu(), l.DefaultRequest.Memory(), l.Default.Cpu(), l.Default.Memory())})
	}
	np := &networkingv1.NetworkPolicy{}
	if e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.NetworkPolicyName}, np) == nil {
		rows = append(rows, []string{"NetworkPolicy/" + np.Name, fmt.Sprintf("ingress: same namespace + %d more; egress: DNS + %d rule(s)",
			len(np.Spec.Ingress[0].From)-1, len(np.Spec.Egress)-1)})
	}
	cert := &cmv1.Certificate{}
	if e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.CertificateName}, cert) == nil {
		rows = append(rows, []string{"Certificate/" + cert.Name, fmt.Sprintf("%v from %s %s",
			cert.Spec.DNSNames, cert.Spec.IssuerRef.Kind, cert.Spec.IssuerRef.Name)})
	}
	ing := &networkingv1.Ingress{}
	if e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: catalyst.IngressName}, ing) == nil && len(ing.Spec.Rules) > 0 {
		rows = append(rows, []string{"Ingress/" + ing.Name, fmt.Sprintf("%s -> Service %s:%s", ing.Spec.Rules[0].Host,
			catalyst.ServiceName, catalyst.ServicePort)})
	}
	e.Table([]string{"OBJECT", "WHAT"}, rows)
}

// catalystDelete deletes the Environment and waits until the namespace and then the Environment are gone.
func catalystDelete(ctx context.Context, e *Env, env *catalystv1.Environment, ns string) {
	e.Step("Deleting Environment %s/%s: the operator deletes namespace %s and lets the Environment go once it is gone",
		env.Namespace, env.Name, ns)
	t := time.Now()
	if err := e.Client.Delete(ctx, env); client.IgnoreNotFound(err) != nil {
		e.fail(fmt.Errorf("delete Environment %s: %w", env.Name, err))
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, e.Timeout, true, func(ctx context.Context) (bool, error) {
		envErr := e.Client.Get(ctx, client.ObjectKeyFromObject(env), &catalystv1.Environment{})
		nsErr := e.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(envErr) && !apierrors.IsNotFound(nsErr) {
			return false, fmt.Errorf("the Environment went before its namespace %s", ns)
		}
		return apierrors.IsNotFound(envErr), nil
	})
	if err != nil {
		e.fail(fmt.Errorf("delete Environment %s: %w", env.Name, err))
		return
	}
	e.Printf("namespace %s and then Environment %s are gone after %s", ns, env.Name, secs(time.Since(t)))
}
