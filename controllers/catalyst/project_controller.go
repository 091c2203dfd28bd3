package catalyst

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// projectFieldOwner is the field manager of the status the Project controller writes.
const projectFieldOwner = oplabels.FieldOwner + "/project"

// ProjectReconciler counts each Project's Environments and, when the Project is deleted, deletes them
// and holds the Project until they are gone.
type ProjectReconciler struct {
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Client reads from the manager's cache and writes to the API server; SetupWithManager fills it
	// and Recorder.
	Client client.Client
	// Recorder emits the events users see with kubectl describe.
	Recorder record.EventRecorder

	status    *reconcile.StatusWriter
	finalizer reconcile.Finalizer
}

// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=projects,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=projects/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=projects/finalizers,verbs=update
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments,verbs=get;list;watch;delete

// Reconcile records a Project's Environments, or deletes them with a deleted Project.
func (r *ProjectReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &catalystv1.Project{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, p, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	of := client.MatchingFields{projectIndex: req.Namespace + "/" + req.Name}
	var envs catalystv1.EnvironmentList
	if !p.DeletionTimestamp.IsZero() {
		if err := r.Client.List(ctx, &envs, of); err != nil {
			return ctrl.Result{}, fmt.Errorf("list environments: %w", err)
		}
		return r.finalize(ctx, p, allowedEnvironments(p, envs.Items))
	}
	// Only counted: the cache's own objects are read, without a deep copy of each (a Project with
	// thousands of environments is counted on every environment created or deleted).
	if err := r.Client.List(ctx, &envs, of, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("list environments: %w", err)
	}
	envs.Items = allowedEnvironments(p, envs.Items)
	if err := r.finalizer.Ensure(ctx, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := r.newProjectScope(p, envs.Items)
	// A Project has no parts of its own: Ready is True and says how many Environments refer to it.
	return reconcile.Finish(ctx, r.status, s, func() *catalystv1.ProjectStatus {
		s.status.ObservedGeneration = p.Generation
		s.status.Environments = int32(len(s.envs))
		s.Summarize(nil, catalystv1.ReasonReady, fmt.Sprintf("%d environment(s) refer to the project", len(s.envs)))
		return s.status
	})
}

// allowedEnvironments are those of envs (the Environments that name p) that p allows: only they are
// counted, deleted and waited for. An Environment of another namespace naming p uninvited neither
// inflates its count nor holds up its deletion.
func allowedEnvironments(p *catalystv1.Project, envs []catalystv1.Environment) []catalystv1.Environment {
	out := envs[:0:0]
	for _, e := range envs {
		if catalyst.ProjectAllows(p, e.Namespace) {
			out = append(out, e)
		}
	}
	return out
}

// finalize deletes a deleted Project's Environments and releases the Project once they are gone (each
// Environment's own finalizer first deletes its namespace). A deployment Environment protected from
// deletion (without catalyst.dev/allow-deletion: "true") is not deleted: the Project waits, naming it,
// until it carries the annotation (which wakes the Project) or is deleted otherwise.
func (r *ProjectReconciler) finalize(ctx context.Context, p *catalystv1.Project, envs []catalystv1.Environment) (ctrl.Result, error) {
	if !r.finalizer.Has(p) {
		return ctrl.Result{}, nil
	}
	if len(envs) == 0 {
		if err := r.finalizer.Release(ctx, p); err != nil {
			return ctrl.Result{}, err
		}
		r.status.Forget(client.ObjectKeyFromObject(p))
		return ctrl.Result{}, nil
	}
	s := r.newProjectScope(p, envs)
	return reconcile.Finish(ctx, r.status, s, func() *catalystv1.ProjectStatus {
		msg := fmt.Sprintf("the Project is being deleted: waiting for %d environment(s) to be gone", len(s.envs))
		if len(s.protected) > 0 {
			msg += fmt.Sprintf("; protected from deletion, deleted only once they carry the annotation %s: \"true\": %s",
				catalystv1.AnnotationAllowDeletion, strings.Join(s.protected, ", "))
			// Not s.Fail nor s.WarnOnce: the condition's reason stays Deleting while the event's is
			// EnvironmentsProtected, and the message is the news (which Environments hold the Project, and
			// how many are left), so the Warning comes again whenever Ready's message changes.
			if !reconcile.Said(s.Before, catalystv1.ConditionReady, metav1.ConditionFalse, catalystv1.ReasonDeleting, msg) {
				s.Warn(catalystv1.EventEnvironmentsProtected, msg)
			}
		}
		s.status.Environments = int32(len(s.envs))
		s.Set(catalystv1.ConditionReady, metav1.ConditionFalse, catalystv1.ReasonDeleting, msg)
		return s.status
	}, r.deleteEnvironments)
}

// deleteEnvironments deletes the Project's Environments that are not already going, except those
// protected from deletion, which it lists.
func (r *ProjectReconciler) deleteEnvironments(ctx context.Context, s *projectScope) (ctrl.Result, error) {
	var deleted []string
	var errs []error
	for i := range s.envs {
		e := &s.envs[i]
		if !e.DeletionTimestamp.IsZero() {
			continue
		}
		if deletionProtected(e) {
			s.protected = append(s.protected, e.Namespace+"/"+e.Name)
			continue
		}
		if err := r.Client.Delete(ctx, e, client.Preconditions{UID: &e.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete environment %s/%s: %w", e.Namespace, e.Name, err))
			continue
		}
		deleted = append(deleted, e.Namespace+"/"+e.Name)
	}
	if len(deleted) > 0 {
		s.Normalf(catalystv1.EventEnvironmentsDeleted, "Deleted %d Environment(s) with the Project: %v", len(deleted), deleted)
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// SetupWithManager registers the reconciler; Environments wake their Project.
func (r *ProjectReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, nil, &r.Recorder)
	r.status = &reconcile.StatusWriter{
		Client: r.Client, FieldOwner: projectFieldOwner,
		Fields: []string{"observedGeneration", "environments"}, Conditions: []string{catalystv1.ConditionReady},
	}
	r.finalizer = reconcile.Finalizer{Client: r.Client, Name: catalystv1.Finalizer}
	return ctrl.NewControllerManagedBy(mgr).
		Named("project").
		For(&catalystv1.Project{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletionStarted))).
		Watches(&catalystv1.Environment{}, projectsOfEnvironment).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles)).
		Complete(opmetrics.Instrument(opmetrics.Project, mgr.GetClient(), r))
}

// projectsOfEnvironment wakes the Projects whose count an Environment event changes: its Project when it is
// created or deleted, and both Projects when an update moves it from one to another. Every other update
// (its status, above all, written several times per environment) leaves the counts alone and wakes
// nothing: with every update waking the Project, which lists its environments, creating N environments
// of one Project cost O(N²). An Environment's delete event comes from the cache, whose object still has
// the labels it had, so the Project it named is woken.
var projectsOfEnvironment = handler.Funcs{
	CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		enqueueProject(q, e.Object)
	},
	UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		if projectOf(e.ObjectOld) != projectOf(e.ObjectNew) {
			enqueueProject(q, e.ObjectOld)
			enqueueProject(q, e.ObjectNew)
			return
		}
		// A deleted Project waits for its protected Environments: the annotation that frees one wakes it.
		if protectedOf(e.ObjectOld) != protectedOf(e.ObjectNew) {
			enqueueProject(q, e.ObjectNew)
		}
	},
	DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		enqueueProject(q, e.Object)
	},
}

// projectOf is the namespace/name of the Project o, an Environment, refers to; "" for any other object.
func projectOf(o client.Object) string {
	env, ok := o.(*catalystv1.Environment)
	if !ok {
		return ""
	}
	return projectKey(env)
}

// protectedOf says whether o, an Environment, is protected from deletion.
func protectedOf(o client.Object) bool {
	env, ok := o.(*catalystv1.Environment)
	return ok && deletionProtected(env)
}

func enqueueProject(q workqueue.TypedRateLimitingInterface[ctrl.Request], o client.Object) {
	if key := projectOf(o); key != "" {
		ns, name, _ := strings.Cut(key, "/")
		q.Add(ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	}
}
