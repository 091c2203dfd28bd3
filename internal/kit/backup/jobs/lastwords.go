package jobs

import corev1 "k8s.io/api/core/v1"

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
