package testutil

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FinishJob plays the Job controller, which envtest does not run (nor kwok a container): it marks job
// succeeded or failed through the status subresource, with the conditions batch/v1 requires before
// Complete or Failed (SuccessCriteriaMet, FailureTarget), reason and message on the failure's conditions.
func FinishJob(ctx context.Context, c client.Client, job *batchv1.Job, succeeded bool, reason, message string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j := &batchv1.Job{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), j); err != nil {
			return err
		}
		now := metav1.Now()
		start := metav1.NewTime(now.Add(-time.Minute))
		j.Status.StartTime = &start
		cond := func(t batchv1.JobConditionType, reason, message string) batchv1.JobCondition {
			return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
				LastProbeTime: now, LastTransitionTime: now}
		}
		if succeeded {
			j.Status.Succeeded = 1
			j.Status.CompletionTime = &now
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, ""),
				cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, "")}
		} else {
			j.Status.Failed = 1
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, reason, message), cond(batchv1.JobFailed, reason, message)}
		}
		return c.Status().Update(ctx, j)
	})
}
