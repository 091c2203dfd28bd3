package catalyst

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operator/platform-operator/internal/catalyst"
)

// The end of a failed build's log comes from the newest build pod's status (the kubelet's termination
// message of the builder container), so the operator needs no pods/log permission.
var _ = Describe("a failed build's log", func() {
	It("is the termination message of the newest pod's builder container, and nothing before it ends", func(ctx SpecContext) {
		ns := newNamespace(ctx, "buildlog")
		pod := func(name string, created time.Time, message string) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{batchv1.JobNameLabel: "j"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: catalyst.BuildContainer, Image: "builder"}}}}
			p, err := clientset.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			if message != "" {
				state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: message}}
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: catalyst.BuildContainer, Image: "builder", State: state}}
			p.Status.StartTime = &metav1.Time{Time: created}
			_, err = clientset.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		r := &buildPhase{Pods: clientset.CoreV1()}
		Expect(r.buildLog(ctx, ns, "j")).To(BeEmpty()) // no pod
		pod("first", time.Now(), "error building image: step 1\n")
		Expect(r.buildLog(ctx, ns, "j")).To(Equal("error building image: step 1\n"))
		time.Sleep(1100 * time.Millisecond) // creation timestamps have a resolution of a second
		pod("second", time.Now(), "")
		Expect(r.buildLog(ctx, ns, "j")).To(BeEmpty()) // the newest pod's builder still runs
		Expect(r.buildLog(ctx, ns, "other")).To(BeEmpty())
	})
})
