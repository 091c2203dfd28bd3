package jobs

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
