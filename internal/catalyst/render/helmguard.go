package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// RefusedError is the error of a Helm action whose objects the guard refused: Objects name them as
// Policy.Check does.
type RefusedError struct {
	Objects []string
}

func (e *RefusedError) Error() string {
	return "objects the environment may not hold: " + strings.Join(e.Objects, ", ")
}

// GuardKubeClient wraps Helm's KubeClient so that Helm's real install, upgrade and rollback send nothing p
// refuses. In Helm v3.19.5 every object an action sends first goes through Build:
//
//   - install: the chart's CRDs (Build with validate false, one file at a time), the manifest (validate
//     unless DisableOpenAPIValidation) and each hook (validate true; and before that, for the default
//     before-hook-creation delete policy, validate false to delete the hook's objects);
//   - upgrade: the new manifest is built to validate it, then the current release's (validate false) and
//     the new one's again; Update(current, target) sends target and deletes what only current holds;
//   - rollback: the current and the target release's manifests, both with validate false;
//   - uninstall and status: the release's manifest, validate false, to delete or read it.
//
// Build refuses, with a *RefusedError, any object outside p.Namespace (cluster-scoped, another
// namespace, a kind the cluster does not serve, twice the same), whatever it is built for: nothing of
// another namespace may even be deleted, and a release record (a Secret of the namespace, which the
// tenant may be able to write) cannot smuggle one in. The other rules (hosts, Services, RBAC, issuers,
// ...) it checks at once when validate is true, which is what Helm builds to create: the manifest and the
// hooks. When validate is false the build may be the current revision of an upgrade, which an upgrade
// must be able to replace even when a rule it breaks was added since; those rules are then checked on
// what is sent: Create, Update and UpdateThreeWayMerge refuse, from the objects they would send (the
// target of an update, never the current revision it replaces), whatever p refuses. So a rollback to a
// revision that is now refused fails, and an upgrade away from it succeeds. Delete is refused only
// objects outside the namespace.
//
// Helm formats the errors of hooks with %s, which loses the *RefusedError; Refusals gives the guard's
// refusals whatever Helm made of the error.
func GuardKubeClient(inner kube.Interface, p Policy) kube.Interface {
	return &kubeGuard{inner: inner, policy: p}
}

// Refusals is every refusal the guard kc returned so far, in order; nil when kc is not a guard.
func Refusals(kc kube.Interface) []string {
	g, ok := kc.(*kubeGuard)
	if !ok {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.refused...)
}

// kubeGuard is the guarded KubeClient. It implements every optional interface Helm looks for on its
// KubeClient (Helm's install asserts InterfaceThreeWayMerge without checking), delegating to inner when
// inner does, else doing what Helm does without it.
type kubeGuard struct {
	inner  kube.Interface
	policy Policy

	mu      sync.Mutex
	refused []string
}

var (
	_ kube.Interface                    = (*kubeGuard)(nil)
	_ kube.InterfaceExt                 = (*kubeGuard)(nil)
	_ kube.InterfaceThreeWayMerge       = (*kubeGuard)(nil)
	_ kube.InterfaceLogs                = (*kubeGuard)(nil)
	_ kube.InterfaceDeletionPropagation = (*kubeGuard)(nil)
	_ kube.InterfaceResources           = (*kubeGuard)(nil)
)

// refuse records refused and returns it as an error; nil when it is empty.
func (g *kubeGuard) refuse(refused []string) error {
	if len(refused) == 0 {
		return nil
	}
	g.mu.Lock()
	g.refused = append(g.refused, refused...)
	g.mu.Unlock()
	return &RefusedError{Objects: refused}
}

// Build refuses what p refuses (see GuardKubeClient) before inner reads anything.
func (g *kubeGuard) Build(reader io.Reader, validate bool) (kube.ResourceList, error) {
	data, err := io.ReadAll(reader)
	if err != nil {
		return nil, err
	}
	objs, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("the guard could not read the manifest: %w", err)
	}
	var refused []string
	if validate {
		refused = g.policy.Check(objs)
	} else {
		refused = g.policy.boundaries(objs)
	}
	if err := g.refuse(refused); err != nil {
		return nil, err
	}
	return g.inner.Build(bytes.NewReader(data), validate)
}

// sent is what p refuses of the objects of list, as they are sent.
func (g *kubeGuard) sent(list kube.ResourceList, rules func(Policy, []*unstructured.Unstructured) []string) error {
	objs := make([]*unstructured.Unstructured, 0, len(list))
	for _, info := range list {
		u, err := asUnstructured(info.Object)
		if err != nil {
			return g.refuse([]string{fmt.Sprintf("%s/%s (the guard cannot read it: %v)", info.Namespace, info.Name, err)})
		}
		if u.GetNamespace() == "" {
			u.SetNamespace(info.Namespace)
		}
		objs = append(objs, u)
	}
	return g.refuse(rules(g.policy, objs))
}

// asUnstructured is a copy of obj as an unstructured object.
func asUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	switch o := obj.(type) {
	case nil:
		return nil, errors.New("no object")
	case *unstructured.Unstructured:
		return o.DeepCopy(), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return u, nil
}

func (g *kubeGuard) Create(resources kube.ResourceList) (*kube.Result, error) {
	if err := g.sent(resources, Policy.Check); err != nil {
		return nil, err
	}
	return g.inner.Create(resources)
}

func (g *kubeGuard) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	if err := g.sent(target, Policy.Check); err != nil {
		return nil, err
	}
	return g.inner.Update(original, target, force)
}

func (g *kubeGuard) UpdateThreeWayMerge(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	if err := g.sent(target, Policy.Check); err != nil {
		return nil, err
	}
	if tw, ok := g.inner.(kube.InterfaceThreeWayMerge); ok {
		return tw.UpdateThreeWayMerge(original, target, force)
	}
	return nil, errors.New("the KubeClient cannot update with a three-way merge")
}

func (g *kubeGuard) Delete(resources kube.ResourceList) (*kube.Result, []error) {
	if err := g.sent(resources, Policy.boundaries); err != nil {
		return nil, []error{err}
	}
	return g.inner.Delete(resources)
}

func (g *kubeGuard) DeleteWithPropagationPolicy(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	if err := g.sent(resources, Policy.boundaries); err != nil {
		return nil, []error{err}
	}
	if dp, ok := g.inner.(kube.InterfaceDeletionPropagation); ok {
		return dp.DeleteWithPropagationPolicy(resources, policy)
	}
	return g.inner.Delete(resources)
}

func (g *kubeGuard) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return g.inner.Wait(resources, timeout)
}

func (g *kubeGuard) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return g.inner.WaitWithJobs(resources, timeout)
}

func (g *kubeGuard) WatchUntilReady(resources kube.ResourceList, timeout time.Duration) error {
	return g.inner.WatchUntilReady(resources, timeout)
}

func (g *kubeGuard) WaitAndGetCompletedPodPhase(name string, timeout time.Duration) (corev1.PodPhase, error) {
	return g.inner.WaitAndGetCompletedPodPhase(name, timeout)
}

func (g *kubeGuard) IsReachable() error { return g.inner.IsReachable() }

func (g *kubeGuard) WaitForDelete(resources kube.ResourceList, timeout time.Duration) error {
	if ext, ok := g.inner.(kube.InterfaceExt); ok {
		return ext.WaitForDelete(resources, timeout)
	}
	return nil
}

func (g *kubeGuard) GetPodList(namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	if l, ok := g.inner.(kube.InterfaceLogs); ok {
		return l.GetPodList(namespace, opts)
	}
	return nil, errors.New("the KubeClient cannot list pods")
}

func (g *kubeGuard) OutputContainerLogsForPodList(pods *corev1.PodList, namespace string, w func(namespace, pod, container string) io.Writer) error {
	if l, ok := g.inner.(kube.InterfaceLogs); ok {
		return l.OutputContainerLogsForPodList(pods, namespace, w)
	}
	return errors.New("the KubeClient cannot read logs")
}

func (g *kubeGuard) Get(resources kube.ResourceList, related bool) (map[string][]runtime.Object, error) {
	if r, ok := g.inner.(kube.InterfaceResources); ok {
		return r.Get(resources, related)
	}
	return nil, errors.New("the KubeClient cannot read resources")
}

func (g *kubeGuard) BuildTable(reader io.Reader, validate bool) (kube.ResourceList, error) {
	if r, ok := g.inner.(kube.InterfaceResources); ok {
		return r.BuildTable(reader, validate)
	}
	return nil, errors.New("the KubeClient cannot build tables")
}
