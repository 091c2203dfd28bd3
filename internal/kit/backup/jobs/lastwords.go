package jobs

import (
	"context"
	"encoding/json"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/backup"
)

// LastWords reads the pods of a failed Job (reader: the API server, pods are not cached) and returns what
// its failed container said: "container: message", the message cut to its last limit bytes. When the
// message is the program's JSON result line (verify, restore), reason is its reason and the message reads
// "reason: message". Both are "" when no pod's container failed with a message.
func LastWords(ctx context.Context, reader client.Reader, job *batchv1.Job, limit int) (reason, words string) {
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", ""
	}
	name, msg := FailedTermination(pods.Items)
	if name == "" {
		return "", ""
	}
	msg = strings.TrimSpace(msg)
	var res backup.VerifyResult
	if json.Unmarshal([]byte(msg), &res) == nil && res.Reason != "" {
		reason, msg = res.Reason, res.Reason+": "+res.Message
	}
	return reason, name + ": " + Tail(msg, limit)
}

// FailedTermination is the container of the newest of a Job's pods that failed with a termination message
// (init containers first), and that message; both "" when there is none.
func FailedTermination(pods []corev1.Pod) (container, message string) {
	var newest *corev1.Pod
	for i := range pods {
		if newest == nil || pods[i].CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = &pods[i]
		}
	}
	if newest == nil {
		return "", ""
	}
	for _, c := range append(newest.Status.InitContainerStatuses, newest.Status.ContainerStatuses...) {
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 && t.Message != "" {
			return c.Name, t.Message
		}
	}
	return "", ""
}

// Tail is msg cut to its last limit bytes, marked with "..." when cut.
func Tail(msg string, limit int) string {
	if len(msg) > limit {
		return "..." + msg[len(msg)-limit:]
	}
	return msg
}

// Termination is how container ended in the newest of a Job's pods: its exit code and termination
// message (the program's result line, written on success and failure alike); ok is false while no pod's
// container has terminated.
func Termination(pods []corev1.Pod, container string) (exitCode int32, message string, ok bool) {
	var newest *corev1.Pod
	for i := range pods {
		if newest == nil || pods[i].CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = &pods[i]
		}
	}
	if newest == nil {
		return 0, "", false
	}
	for _, c := range newest.Status.ContainerStatuses {
		if t := c.State.Terminated; c.Name == container && t != nil {
			return t.ExitCode, t.Message, true
		}
	}
	return 0, "", false
}
