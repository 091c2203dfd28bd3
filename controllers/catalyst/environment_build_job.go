package catalyst

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The build Job: made when the registry lacks the image, followed until it pushes it, reported when it
// fails (with the end of its log, redacted), and deleted once a newer commit supersedes it.

// build runs, follows and reports the build Job of the commit, for an image the registry lacks. p is the
// Project with its build (WithDefaultBuild); secrets are the registry Secret's values, kept out of what
// a failure reports.
func (r *buildPhase) build(ctx context.Context, s *environmentScope, p *catalystv1.Project, st *catalystv1.BuildStatus,
	retry string, secrets []string) (ctrl.Result, error) {
	if st.Failure != "" && st.Retry == retry {
		// Redacted when it was recorded; again, for one recorded by an older operator.
		st.Failure = catalyst.Redact(st.Failure, secrets)
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonBuildFailed, st.Failure+fmt.Sprintf(
			"; set annotation %s to a new value, or a new spec.source.commitSha, to build again", catalystv1.AnnotationRetryBuild))
		return ctrl.Result{}, nil
	}
	commit, ns := st.CommitSHA, p.Namespace
	name := catalyst.BuildJobName(s.env, commit, retry)
	image := catalyst.ImageReference(p, commit)
	job := &batchv1.Job{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)
	if apierrors.IsNotFound(err) {
		// The cache holds only the operator's Jobs: one more read to be sure the name is free.
		err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)
	}
	switch {
	case apierrors.IsNotFound(err):
		return r.startBuild(ctx, s, p, st, name, image, retry)
	case err != nil:
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting, "the build Job could not be read: "+err.Error())
		return ctrl.Result{}, fmt.Errorf("read build job %s/%s: %w", ns, name, err)
	case !ownBuild(job, s.env):
		msg := fmt.Sprintf("Job %s/%s, the name of the build of %s, was not made by the operator for this Environment; it is left untouched", ns, name, image)
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonNameConflict, msg)
		return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
	}
	// The Job knows its rank: the status read may be older than the write that counted it.
	st.JobName, st.Retry = name, retry
	st.Attempts = max(st.Attempts, catalyst.AttemptOf(job))
	known := st.Failure
	st.Failure = ""
	switch state, reason, message := catalyst.StateOf(job); state {
	case catalyst.JobSucceeded:
		msg := fmt.Sprintf("build Job %s/%s succeeded, yet registry %s does not have %s; is the Job pushing elsewhere?",
			ns, name, p.Spec.Build.Registry, image)
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonImageMissingAfterBuild, msg)
		return ctrl.Result{RequeueAfter: r.registryRetry(s, catalystv1.ReasonImageMissingAfterBuild)}, nil
	case catalyst.JobFailed:
		// The Job's message and its log may quote what the build saw: no credential goes on.
		secrets = append(secrets, r.gitSecretValues(ctx, p)...)
		failure := catalyst.Redact(catalyst.Failure(ns+"/"+name, reason, message), secrets)
		st.Failure = failure
		// Not s.Refuse: the event quotes the end of the build log, which the condition does not hold, and
		// is counted with the failure; status.build.failure, which outlives the Job, says whether the
		// user was told of this one.
		if known != failure {
			instruments.BuildFinished(false, buildDuration(job))
			s.Warn(catalystv1.ReasonBuildFailed,
				catalyst.FailureEvent(failure, r.buildLog(ctx, ns, name), secrets))
		}
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonBuildFailed, failure+fmt.Sprintf(
			"; set annotation %s to a new value, or a new spec.source.commitSha, to build again", catalystv1.AnnotationRetryBuild))
	default:
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonBuilding,
			fmt.Sprintf("build Job %s/%s is building %s", ns, name, image))
	}
	return ctrl.Result{}, nil
}

// startBuild creates the build Job, once the repository's host is allowed and the Project's namespace
// holds what the Job needs besides its Secrets: the NetworkPolicy that fences build pods and, with a Git
// CA bundle, the ConfigMap carrying it. A create request, not an apply: the Job is never changed after,
// and a Job of that name made meanwhile by anyone makes the request fail instead of being taken over.
func (r *buildPhase) startBuild(ctx context.Context, s *environmentScope, p *catalystv1.Project, st *catalystv1.BuildStatus,
	name, image, retry string) (ctrl.Result, error) {
	commit := st.CommitSHA
	if !catalyst.FullCommit(commit) {
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonCommitAbbreviated, fmt.Sprintf(
			"registry %s does not have %s, and spec.source.commitSha %s is abbreviated: the builder checks out only a whole commit id (40 or 64 hexadecimal digits)",
			p.Spec.Build.Registry, image, commit))
		return ctrl.Result{}, nil
	}
	if allowed := r.Build.GitAllowed; allowed != nil {
		if err := allowed(p.Spec.Source.RepositoryURL); err != nil {
			s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonGitHostNotAllowed, fmt.Sprintf(
				"registry %s does not have %s, and it is not built: %v", p.Spec.Build.Registry, image, err))
			return ctrl.Result{}, nil
		}
	}
	if ok, res, err := r.applyBuildChildren(ctx, s, p.Namespace); !ok {
		return res, err
	}
	job := catalyst.BuildJob(catalyst.BuildInput{Env: s.env, Project: p, Name: name, Commit: commit,
		Image: image, Attempt: st.Attempts + 1, Config: r.Build})
	err := r.Client.Create(ctx, job, client.FieldOwner(oplabels.FieldOwner))
	var status apierrors.APIStatus
	switch {
	case apierrors.IsAlreadyExists(err):
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting,
			fmt.Sprintf("Job %s/%s appeared while it was being created; checking whose it is", job.Namespace, name))
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil && (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err)) && errors.As(err, &status):
		msg := fmt.Sprintf("the API server refused build Job %s/%s: %s", job.Namespace, name, status.Status().Message)
		s.Refuse(catalystv1.ConditionBuildReady, catalystv1.ReasonApplyFailed, msg)
		return ctrl.Result{RequeueAfter: reconcile.RefusedRetry}, nil
	case err != nil:
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionUnknown, catalystv1.ReasonApplyFailed, err.Error())
		return ctrl.Result{}, fmt.Errorf("create build job %s/%s: %w", job.Namespace, name, err)
	}
	st.Attempts = catalyst.AttemptOf(job)
	st.JobName, st.Retry, st.Failure = name, retry, ""
	s.Normalf(catalystv1.EventBuildStarted,
		"Building %s from commit %s with Job %s/%s", image, commit, job.Namespace, name)
	s.Set(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonBuilding,
		fmt.Sprintf("build Job %s/%s is building %s", job.Namespace, name, image))
	return ctrl.Result{}, nil
}

// applyBuildChildren applies, in the Project's namespace ns, the NetworkPolicy of the build pods (open
// to the ports of every Project of the namespace: one policy, the same whichever Environment sends it)
// and, with a Git CA bundle, its ConfigMap. Neither is applied over an object of the same name the
// operator did not make (NameConflict).
func (r *buildPhase) applyBuildChildren(ctx context.Context, s *environmentScope, ns string) (bool, ctrl.Result, error) {
	var projects catalystv1.ProjectList
	if err := r.Client.List(ctx, &projects, client.InNamespace(ns)); err != nil {
		s.Set(catalystv1.ConditionBuildReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting, "the namespace's Projects could not be listed: "+err.Error())
		return false, ctrl.Result{}, fmt.Errorf("list projects in %s: %w", ns, err)
	}
	children := []client.Object{catalyst.BuildNetworkPolicy(ns, catalyst.BuildEgressOf(projects.Items, r.Build))}
	if cm := catalyst.GitCAConfigMap(ns, r.Build.GitCABundle); cm != nil {
		children = append(children, cm)
	}
	for _, c := range children {
		if ok, res, err := s.Apply(ctx, c, catalystv1.ConditionBuildReady); !ok {
			return false, res, err
		}
	}
	return true, ctrl.Result{}, nil
}

// buildDuration is how long a finished build Job ran, from its start to its completion or its Failed
// condition; -1 when the Job (nil: gone) does not say.
func buildDuration(job *batchv1.Job) time.Duration {
	if job == nil || job.Status.StartTime == nil {
		return -1
	}
	end := job.Status.CompletionTime
	for _, c := range job.Status.Conditions {
		if end == nil && c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			end = &c.LastTransitionTime
		}
	}
	if end == nil {
		return -1
	}
	return end.Sub(job.Status.StartTime.Time)
}

// ownBuild says whether job is a build Job the operator made for env: its managed-by label and env's UID.
func ownBuild(job *batchv1.Job, env *catalystv1.Environment) bool {
	return oplabels.IsManaged(job.Labels) && env.UID != "" && job.Labels[catalyst.BuildOwnerUIDLabel] == string(env.UID)
}

// deleteSupersededBuilds deletes the environment's build Jobs that still run for another commit or an
// earlier retry: their image is no longer wanted. Finished Jobs are left to their TTL (their pod keeps
// the log). Only Jobs the operator made for this Environment are considered. The Job of the current
// commit and retry annotation is kept even when status.build does not name it yet (a status write the
// cache has not seen when the image appears).
func (r *buildPhase) deleteSupersededBuilds(ctx context.Context, s *environmentScope, st *catalystv1.BuildStatus) {
	current := catalyst.BuildJobName(s.env, st.CommitSHA, s.env.Annotations[catalystv1.AnnotationRetryBuild])
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(s.project.Namespace),
		client.MatchingLabels{catalyst.BuildOwnerUIDLabel: string(s.env.UID), oplabels.ManagedByLabel: oplabels.OperatorName}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list build jobs")
		return
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if job.Name == st.JobName || job.Name == current || !job.DeletionTimestamp.IsZero() || !ownBuild(job, s.env) {
			continue
		}
		if state, _, _ := catalyst.StateOf(job); state != catalyst.JobRunning {
			continue
		}
		err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: ptr.To(job.UID)})
		if client.IgnoreNotFound(err) != nil {
			ctrl.LoggerFrom(ctx).Error(err, "delete superseded build job", "job", job.Name)
			continue
		}
		s.Normalf(reconcile.EventDeleted,
			"Deleted Job %s/%s: it built commit %s, which the environment no longer runs", job.Namespace, job.Name,
			job.Annotations[catalyst.BuildCommitAnnotation])
	}
}

// buildLog is the end of the builder container's log in the Job's newest pod, as the kubelet keeps it in
// the container's termination message (the container's FallbackToLogsOnError policy: the last 80 lines or
// 2 KiB of a failed container's log, more than the event's 1 KiB holds). Reading it from the pod's status
// needs only pods list, not pods/log. Empty when there is no pod left (or, as in envtest, never was one)
// or the container has not ended.
func (r *buildPhase) buildLog(ctx context.Context, ns, job string) string {
	if r.Pods == nil {
		return ""
	}
	pods, err := r.Pods.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil || len(pods.Items) == 0 {
		return ""
	}
	newest := &pods.Items[0]
	for i := range pods.Items {
		if pods.Items[i].CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = &pods.Items[i]
		}
	}
	for _, c := range newest.Status.ContainerStatuses {
		if c.Name == catalyst.BuildContainer && c.State.Terminated != nil {
			return c.State.Terminated.Message
		}
	}
	return ""
}
