package jobs

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Finished is the Job's final condition (Complete or Failed), or "" while it runs.
func Finished(job *batchv1.Job) batchv1.JobConditionType {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

// CompletionTime is when the Job completed: its completionTime, else its Complete condition's
// transition, else (never for a Job the Job controller completed) its creation.
func CompletionTime(job *batchv1.Job) metav1.Time {
	if job.Status.CompletionTime != nil {
		return *job.Status.CompletionTime
	}
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete {
			return c.LastTransitionTime
		}
	}
	return job.CreationTimestamp
}

// DeleteControlled deletes owner's Job name (in owner's namespace) with its pods, and with them (by
// garbage collection) whatever the Job controls. A Job that is gone, already going, or not controlled by
// owner (someone else's, never touched) is no error; the UID precondition deletes only the Job read.
func DeleteControlled(ctx context.Context, c client.Client, owner client.Object, name string) error {
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(job, owner) || !job.DeletionTimestamp.IsZero() {
		return nil
	}
	err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: ptr.To(job.UID)})
	return client.IgnoreNotFound(err)
}
