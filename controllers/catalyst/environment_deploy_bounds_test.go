package catalyst

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/render/rendertest"
)

// peakRSS is the process's resident memory high-water mark (VmHWM), in bytes.
func peakRSS() int64 {
	GinkgoHelper()
	return procStatusBytes("VmHWM")
}

// rss is the process's resident memory now (VmRSS), in bytes.
func rss() int64 {
	GinkgoHelper()
	return procStatusBytes("VmRSS")
}

// procStatusBytes is field (a "kB" line of /proc/self/status) in bytes.
func procStatusBytes(field string) int64 {
	GinkgoHelper()
	f, err := os.Open("/proc/self/status")
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return kb << 10
		}
	}
	Fail("no " + field + " in /proc/self/status")
	return 0
}

// bombRelease is a Helm release record (base64 of gzip, as Helm's driver stores it) that decompresses
// to n zero bytes, streamed: the test never holds them.
func bombRelease(n int) []byte {
	GinkgoHelper()
	var gz bytes.Buffer
	w, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	Expect(err).NotTo(HaveOccurred())
	zeros := make([]byte, 1<<20)
	for range n >> 20 {
		_, err := w.Write(zeros)
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(w.Close()).To(Succeed())
	return []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))
}

var _ = Describe("Environment deploys' bounds", func() {
	It("refuses a Helm release record that is a decompression bomb with a condition, its memory bounded, and deploys again once it is gone", func(ctx SpecContext) {
		t, repo, commit := deployTeam(ctx, catalystv1.DeploymentHelm, "chart", rendertest.Chart())
		env, ns := deployEnv(ctx, t, "pr-bomb", commit)
		By("positive control: the release's own record decodes, revision 1 is deployed")
		Eventually(func(g Gomega) {
			_, st := deployment(ctx, g, env)
			g.Expect(st.Revision).To(BeNumerically(">=", 1))
		}).Should(Succeed())

		By("the tenant writes revision 9's record: 1 MiB of Secret that inflates to 640 MiB")
		data := bombRelease(640 << 20)
		GinkgoWriter.Printf("bomb: %d bytes of Secret data\n", len(data))
		before := peakRSS()
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1." + env.Name + ".v9",
				Labels: map[string]string{"owner": "helm", "name": env.Name, "version": "9", "status": "deployed"}},
			Type: "helm.sh/release.v1", Data: map[string][]byte{"release": data}})).To(Succeed())
		next, err := repo.Commit("second", map[string]string{"chart/templates/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\n"})
		Expect(err).NotTo(HaveOccurred())
		t.pushImage(next)
		setCommit(ctx, env, next)
		Eventually(func(g Gomega) {
			c := condition(g, getEnv(ctx, env), catalystv1.ConditionDeploymentReady)
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonHelmFailed))
			g.Expect(c.Message).To(ContainSubstring("sh.helm.release.v1." + env.Name + ".v9 decompresses to more than 32 MiB"))
		}).Should(Succeed())
		after := peakRSS()
		GinkgoWriter.Printf("peak RSS %d MiB before the bomb, %d MiB after\n", before>>20, after>>20)
		Expect(after-before).To(BeNumerically("<", 128<<20), "the bomb grew the process's peak memory by %d MiB", (after-before)>>20)

		By("once the record is gone, the next commit deploys: a new revision")
		Expect(k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1." + env.Name + ".v9"}})).To(Succeed())
		third, err := repo.Commit("third", map[string]string{"chart/templates/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: third\n"})
		Expect(err).NotTo(HaveOccurred())
		t.pushImage(third)
		setCommit(ctx, env, third)
		Eventually(func(g Gomega) {
			_, st := deployment(ctx, g, env)
			g.Expect(st.Revision).To(BeNumerically(">=", 2))
			g.Expect(st.Commit).To(Equal(third))
		}).Should(Succeed())
	})

	It("fails a chart rendering more than the byte limit with RenderFailed, and deploys a smaller one", func(ctx SpecContext) {
		files := rendertest.Chart()
		// 9,000 keys of 1 KiB, some 9 MB, over the default 8 MiB: a range loop, in one ConfigMap so the
		// object count stays under its own limit.
		files["chart/templates/big.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n" +
			"{{- range $i := until (int .Values.big) }}\n  k{{ $i }}: {{ repeat 1024 \"x\" | quote }}\n{{- end }}\n"
		files["chart/values.yaml"] += "big: 9000\n"
		t, repo, commit := deployTeam(ctx, catalystv1.DeploymentHelm, "chart", files)
		env := t.environment("pr-big")
		env.Spec.Source.CommitSHA, env.Spec.Source.Branch = commit, "main"
		Expect(k8s.Create(ctx, env)).To(Succeed())
		// Rendering 8 MiB takes seconds, and a minute or more in a race-instrumented child (make test).
		Eventually(func(g Gomega) {
			c := condition(g, getEnv(ctx, env), catalystv1.ConditionDeploymentReady)
			g.Expect(c.Reason).To(Equal(catalystv1.ReasonRenderFailed))
			g.Expect(c.Message).To(ContainSubstring("the render's output exceeds 8 MiB"))
		}).WithTimeout(4 * time.Minute).Should(Succeed())

		By("positive control: the same chart with 100 keys renders and is deployed")
		files["chart/values.yaml"] = strings.Replace(files["chart/values.yaml"], "big: 9000", "big: 100", 1)
		small, err := repo.Commit("smaller", map[string]string{"chart/values.yaml": files["chart/values.yaml"]})
		Expect(err).NotTo(HaveOccurred())
		t.pushImage(small)
		setCommit(ctx, env, small)
		Eventually(func(g Gomega) {
			_, st := deployment(ctx, g, env)
			g.Expect(st.Commit).To(Equal(small))
			g.Expect(st.Revision).To(BeEquivalentTo(1))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})
})
