package jobs

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// checkToolJob checks what every Job of a data tool's image shares: it runs once, without a service
// account token, non-root under RuntimeDefault seccomp, the operator's binary copied in by the init
// container in operatorImage, and a main container named container in image with a read-only root, no
// privilege escalation, every capability dropped and its logs as the termination message on error.
func checkToolJob(t *testing.T, job *batchv1.Job, operatorImage, container, image string) {
	t.Helper()
	if *job.Spec.BackoffLimit != 0 || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatal("the Job must run once")
	}
	pod := job.Spec.Template.Spec
	if *pod.AutomountServiceAccountToken || !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile == nil {
		t.Fatalf("pod security %+v", pod.SecurityContext)
	}
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != ContainerCopy || pod.InitContainers[0].Image != operatorImage {
		t.Fatalf("init containers %+v", pod.InitContainers)
	}
	c := pod.Containers[0]
	if c.Name != container || c.Image != image {
		t.Fatalf("container %s image %s", c.Name, c.Image)
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		*c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Fatalf("container security %+v %s", c.SecurityContext, c.TerminationMessagePolicy)
	}
}
