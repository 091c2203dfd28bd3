package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/catalyst/source/sourcetest"
	"github.com/platform-operator/platform-operator/internal/testutil/standin"
)

// The catalyst scenario: beside the cluster, before the operator starts, the demo runs an OCI registry
// on 127.0.0.1 holding the image of its app's commit (as a build would have pushed it) and a Git server
// over https on 127.0.0.1, with a CA of its own the operator is told to trust, serving that commit: a
// manifest directory with one Deployment of the environment's image. The team and project namespaces
// are applied, then a Project and its pull-request Environment named as the samples are but pointing at
// those servers and that commit (the samples name github.com, which the demo cannot reach). The operator
// makes the environment's namespace, locks it down and asks cert-manager for its certificate, which
// the demo plays; it finds the image in the registry (nothing to build), fetches the commit, applies the
// Deployment, which kwok runs; once Ready with its URL, the Environment is deleted, and
// kube-controller-manager's namespace controller removes the namespace before the operator lets the
// Environment go.
func init() {
	register(Scenario{
		Name:     "catalyst",
		Title:    "Project and Environment, a locked-down namespace per preview environment, built and deployed (catalyst.catalyst.dev/v1alpha1)",
		Samples:  []string{"extras/catalyst-namespaces.yaml"},
		Objects:  catalystObjects,
		Operator: startCatalystServers,
		Follow:   catalystv1.GroupVersion.WithKind("Environment"),
		Steps: func(obj client.Object) []Step {
			return []Step{
				WaitFor(fmt.Sprintf("Waiting for Environment %s/%s to get its namespace (quota, limits, network policy)",
					obj.GetNamespace(), obj.GetName()), ConditionTrue(catalystv1.ConditionNamespaceReady)),
				Play(playCatalystCertManager),
				WaitFor("Waiting for the operator to find the commit's image in the registry (BuildReady)",
					ConditionTrue(catalystv1.ConditionBuildReady)),
				WaitFor("Waiting for the operator to fetch the commit over https, apply its manifests and see the "+
					"Deployment available (DeploymentReady; kwok plays the kubelet and runs its pod)",
					ConditionTrue(catalystv1.ConditionDeploymentReady)),
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

// The names of the samples' Project and Environment, which the demo's versions keep.
const (
	catalystTeam        = "my-team"
	catalystProject     = "my-project"
	catalystProjectNS   = "my-team-my-project"
	catalystEnvironment = "pr-123"
)

// catalystLocal is what startCatalystServers started, for catalystObjects and catalystShow: nil until it
// ran.
var catalystLocal *catalystServers

type catalystServers struct {
	registry *catalysttest.Registry
	git      *sourcetest.Server
	// repoURL is the app repository's https URL, commit the full id of its one commit.
	repoURL, commit string
	// image is <registry>/<repository>:<commit>, pushed with digest.
	image, digest string
}

// startCatalystServers is the scenario's Operator hook: it starts the registry and the Git server on
// 127.0.0.1, commits the app into a repository under dir, pushes the commit's image, writes the Git
// server's CA to dir/git-ca.pem and returns the flags that make the operator trust it and fetch only from
// 127.0.0.1.
func startCatalystServers(_ context.Context, dir string) (args []string, stop func(), err error) {
	git := &sourcetest.Server{Root: filepath.Join(dir, "git"), SHA1InWant: true}
	repo, err := sourcetest.Init(filepath.Join(git.Root, catalystTeam, catalystProject), "main")
	if err != nil {
		return nil, nil, fmt.Errorf("make the app's Git repository: %w", err)
	}
	commit, err := repo.Commit("The demo app: a Deployment of the environment's image", catalysttest.AppFiles())
	if err != nil {
		return nil, nil, fmt.Errorf("commit the app: %w", err)
	}
	reg := catalysttest.StartRegistry("", "")
	git.Start()
	stop = func() {
		git.Close()
		reg.Close()
		catalystLocal = nil
	}
	l := &catalystServers{registry: reg, git: git, repoURL: git.URL(repo.Dir), commit: commit}
	catalystLocal = l
	l.image = catalyst.ImageReference(catalystDemoProject(), commit)
	if l.digest, err = reg.Push(l.image); err != nil {
		return nil, stop, err
	}
	ca := filepath.Join(dir, "git-ca.pem")
	if err := os.WriteFile(ca, git.CABundle(), 0o600); err != nil {
		return nil, stop, err
	}
	return []string{"--catalyst-git-ca-file=" + ca, "--catalyst-git-hosts=127.0.0.1", "--catalyst-registries=127.0.0.1",
		"--catalyst-allowed-domains=preview.example.com", "--catalyst-allowed-cluster-issuers=" + catalysttest.Issuer}, stop, nil
}

// catalystObjects are the sample Project and Environment as the demo applies them: the Project builds
// into the demo's registry and deploys the manifest directory deploy/ of the demo's repository; the
// Environment is at its commit. Before startCatalystServers ran (in the demo's tests) they name
// 127.0.0.1 without a port and a made-up commit.
func catalystObjects(string) []client.Object {
	env := catalysttest.Environment(catalystProjectNS, catalystEnvironment, catalystTeam, catalystProject)
	env.Annotations[catalystv1.AnnotationEnvironmentID] = "123"
	env.Spec.ProjectRef.Namespace = catalystTeam
	env.Spec.Source.CommitSHA = strings.Repeat("0", 40)
	if catalystLocal != nil {
		env.Spec.Source.CommitSHA = catalystLocal.commit
	}
	return []client.Object{catalystDemoProject(), env}
}

// catalystDemoProject is the sample Project pointed at the demo's registry and repository.
func catalystDemoProject() *catalystv1.Project {
	p := catalysttest.Project(catalystTeam, catalystProject)
	p.Spec.Source.RepositoryURL = "https://127.0.0.1/" + catalystTeam + "/" + catalystProject
	p.Spec.Deployment = catalystv1.ProjectDeployment{Type: catalystv1.DeploymentManifest, Path: catalysttest.AppPath}
	p.Spec.Build = &catalystv1.ProjectBuild{Registry: "127.0.0.1"}
	p.Spec.AllowedEnvironmentNamespaces = []string{catalystProjectNS}
	if catalystLocal != nil {
		p.Spec.Source.RepositoryURL = catalystLocal.repoURL
		p.Spec.Build.Registry = catalystLocal.registry.Host
	}
	return p
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
	if err := standin.MarkCertificateReady(ctx, e.Client, ns, catalyst.CertificateName); err != nil {
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
	catalystShowBuildDeploy(ctx, e, env, ns)
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

// catalystShowBuildDeploy prints where the commit and its image came from, status.build and
// status.deployment, and the Deployment the operator applied from the commit.
func catalystShowBuildDeploy(ctx context.Context, e *Env, env *catalystv1.Environment, ns string) {
	if l := catalystLocal; l != nil {
		e.Step("What the demo runs beside the cluster (on 127.0.0.1)")
		e.Table([]string{"WHAT", "WHERE"}, [][]string{
			{"Git server (https, its own CA)", l.repoURL + " at commit " + l.commit},
			{"OCI registry (plain http)", l.image + " (" + l.digest + "), pushed by the demo as a build would"},
		})
	}
	e.Step("Build and deploy (status.build, status.deployment)")
	var rows [][]string
	if b := env.Status.Build; b != nil {
		rows = append(rows, []string{"build", "commit " + b.CommitSHA, "image " + b.Image + "@" + b.Digest,
			cmp.Or(b.JobName, "no build Job: the image was in the registry")})
	}
	if d := env.Status.Deployment; d != nil {
		rows = append(rows, []string{"deployment", "commit " + d.Commit, "image " + d.Image,
			fmt.Sprintf("%s, %d object(s) applied", d.Type, d.Objects)})
	}
	e.Table([]string{"", "COMMIT", "IMAGE", "HOW"}, rows)

	var deps appsv1.DeploymentList
	if err := e.Client.List(ctx, &deps, client.InNamespace(ns)); err != nil {
		e.Printf("(Deployments in %s: %v)", ns, err)
		return
	}
	e.Step("Deployments the operator applied from the commit in namespace %s", ns)
	rows = nil
	for _, d := range deps.Items {
		var images []string
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		rows = append(rows, []string{d.Name, fmt.Sprintf("%d/%d", d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 1)),
			strings.Join(images, ",")})
	}
	e.Table([]string{"NAME", "AVAILABLE", "IMAGE"}, rows)
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
