package catalyst

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/render/rendertest"
)

// renderChildren are this process's child processes that are render or Helm children (ChildEnv in their
// environment), zombies not waited for included.
func renderChildren() []int {
	self := strconv.Itoa(os.Getpid())
	exe, _ := os.Executable()
	comm := filepath.Base(exe)
	if len(comm) > 15 {
		comm = comm[:15]
	}
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[end+1:]))
		if open < 0 || len(f) < 2 || f[1] != self {
			continue
		}
		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if bytes.Contains(environ, []byte(render.ChildEnv+"=1")) || f[0] == "Z" && string(stat[open+1:end]) == comm {
			out = append(out, pid)
		}
	}
	return out
}

// runawayTemplate grows a string without end (each turn doubles it) when gate holds: it allocates
// until its process has no memory left. The render child's render never runs it (lookup finds
// nothing there, and it renders an install).
func runawayTemplate(gate string) string {
	return "{{- if " + gate + " }}\n{{- $s := \"x\" }}\n{{- range until 64 }}{{- $s = print $s $s }}{{- end }}\n# {{ len $s }}\n{{- end }}\n"
}

// expectRunawayKilled deploys a chart holding runawayTemplate(gate), which deploys (the positive
// control: the gate does not hold on its install), arms the gate, and deploys a second commit: the
// upgrade's Helm action is killed out of memory, reported, leaves no process, goroutine or memory
// behind, and a fixed commit then deploys. Helm renders an upgrade's templates before it records the
// revision, so a render killed there leaves no pending revision: the fixed commit is revision 2.
func expectRunawayKilled(ctx context.Context, name, gate string, arm func(ns string)) {
	GinkgoHelper()
	files := rendertest.Chart()
	files["chart/templates/runaway.yaml"] = runawayTemplate(gate)
	t, repo, commit := deployTeam(ctx, catalystv1.DeploymentHelm, "chart", files)
	env, ns := deployEnv(ctx, t, name, commit)
	By("positive control: the chart's install, its gate closed, is deployed")
	Eventually(func(g Gomega) {
		_, st := deployment(ctx, g, env)
		g.Expect(st.Commit).To(Equal(commit))
		g.Expect(st.Revision).To(BeEquivalentTo(1))
	}).Should(Succeed())
	arm(ns)

	runtime.GC()
	goroutines, before := runtime.NumGoroutine(), rss()
	second, err := repo.Commit("second", map[string]string{"chart/templates/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\n"})
	Expect(err).NotTo(HaveOccurred())
	t.pushImage(second)
	start := time.Now()
	setCommit(ctx, env, second)
	By("the upgrade's Helm action runs the loop: it is killed and reported")
	Eventually(func(g Gomega) {
		c := condition(g, getEnv(ctx, env), catalystv1.ConditionDeploymentReady)
		g.Expect(c.Reason).To(Equal(catalystv1.ReasonRenderFailed))
		g.Expect(c.Message).To(ContainSubstring("commit " + second[:12]))
		g.Expect(c.Message).To(ContainSubstring("the Helm action needed more than 320 MiB of memory; it was stopped"))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	GinkgoWriter.Printf("%s: the runaway upgrade was reported after %s\n", name, time.Since(start).Round(time.Millisecond))
	Eventually(renderChildren).Should(BeEmpty(), "a render or Helm child process is left")
	Eventually(func(g Gomega) {
		runtime.GC()
		g.Expect(runtime.NumGoroutine()).To(BeNumerically("<=", goroutines+10))
	}).Should(Succeed())
	after := rss()
	GinkgoWriter.Printf("%s: goroutines %d before, %d after; RSS %d MiB before, %d MiB after\n",
		name, goroutines, runtime.NumGoroutine(), before>>20, after>>20)
	Expect(after-before).To(BeNumerically("<", 64<<20), "the operator's memory grew by %d MiB", (after-before)>>20)

	By("a fixed commit deploys")
	fixed, err := repo.Commit("fixed", map[string]string{"chart/templates/runaway.yaml": "# fixed\n"})
	Expect(err).NotTo(HaveOccurred())
	t.pushImage(fixed)
	setCommit(ctx, env, fixed)
	Eventually(func(g Gomega) {
		_, st := deployment(ctx, g, env)
		g.Expect(st.Commit).To(Equal(fixed))
		g.Expect(st.Revision).To(BeEquivalentTo(2))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

// chartFiles are the files of the chart under dir/ in files, as chart.Chart.Raw holds them.
func chartFiles(files rendertest.Files, dir string) []*chart.File {
	var out []*chart.File
	for name, data := range files {
		if rel, ok := strings.CutPrefix(name, dir+"/"); ok {
			out = append(out, &chart.File{Name: rel, Data: []byte(data)})
		}
	}
	return out
}

var _ = Describe("Environment Helm actions in a child process", func() {
	It("kills an upgrade whose templates loop only when lookup finds a ConfigMap of the namespace, and deploys a fixed commit", func(ctx SpecContext) {
		expectRunawayKilled(ctx, "pr-lookup", `(lookup "v1" "ConfigMap" .Release.Namespace "trigger")`, func(ns string) {
			Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trigger"}})).To(Succeed())
		})
	})

	It("kills an upgrade whose templates loop only on .Release.IsUpgrade, and deploys a fixed commit", func(ctx SpecContext) {
		expectRunawayKilled(ctx, "pr-isupgrade", ".Release.IsUpgrade", func(string) {})
	})

	It("kills an install whose templates loop without allocating, once lookup finds a ConfigMap, at the render timeout; the next install recovers the pending release", func(ctx SpecContext) {
		t, _, commit := deployTeam(ctx, catalystv1.DeploymentHelm, "chart", rendertest.Chart())
		_, ns := deployEnv(ctx, t, "pr-spin", commit)
		creds, err := render.CredentialsOf(tenantConfig(managerConfig, ns))
		Expect(err).NotTo(HaveOccurred())
		// 10^10 turns of an empty loop: hours of CPU in constant memory.
		files := rendertest.Files{
			"chart/Chart.yaml":           "apiVersion: v2\nname: spin\nversion: 0.1.0\n",
			"chart/templates/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n",
			"chart/templates/spin.yaml":  "{{- if (lookup \"v1\" \"ConfigMap\" .Release.Namespace \"spin-trigger\") }}{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}{{- end }}\n",
			"chart/templates/notes.yaml": "",
		}
		req := func(release string, files rendertest.Files) render.HelmRequest {
			return render.HelmRequest{Chart: chartFiles(files, "chart"), Release: release, Namespace: ns, Config: creds,
				Input: render.Input{Path: "chart", Namespace: ns, Release: release, Labels: map[string]string{DeployLabel: release}},
				Host:  catalyst.Host(ns, testDefaults.Domain), MaxHistory: testHelmHistory,
				ReleaseBytes: maxReleaseBytes, ReleasesBytes: maxReleasesBytes, HelmTimeout: time.Minute}
		}
		limits := render.Limits{Timeout: 10 * time.Second}

		By("positive control: with the ConfigMap absent, the same chart installs")
		res, err := render.HelmAction(ctx, limits, req("spin-control", files))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Outcome).To(Equal(render.HelmDeployed), "%+v", res)
		Expect(res.Revision).To(Equal(1))

		By("with the ConfigMap there, the install's rendering is killed at the render timeout")
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spin-trigger"}})).To(Succeed())
		goroutines := runtime.NumGoroutine()
		start := time.Now()
		_, err = render.HelmAction(ctx, limits, req("spin", files))
		Expect(err).To(MatchError(render.ErrTimedOut))
		Expect(err).To(MatchError(ContainSubstring("rendering the chart took longer than 10s; the Helm action was stopped")))
		GinkgoWriter.Printf("the spinning install was stopped after %s\n", time.Since(start).Round(time.Millisecond))
		// Eventually: the suite's manager renders other Environments in this process meanwhile; a child
		// HelmAction left behind (a zombie not waited for) would stay.
		Eventually(renderChildren).Should(BeEmpty())
		Eventually(runtime.NumGoroutine).Should(BeNumerically("<=", goroutines+10))
		absent(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.spin.v1"}})

		By("an install killed after Helm recorded it (the operator stopped while a hook ran) is left pending-install")
		// envtest runs no Job controller: the hook never completes, Helm waits for it.
		hooked := rendertest.Files{
			"chart/Chart.yaml":        files["chart/Chart.yaml"],
			"chart/templates/cm.yaml": files["chart/templates/cm.yaml"],
			"chart/templates/hook.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-hook\n  annotations:\n" +
				"    helm.sh/hook: pre-install\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n" +
				"      - name: hook\n        image: 127.0.0.1:5000/hook:v1\n",
		}
		killCtx, kill := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			_, err := render.HelmAction(killCtx, limits, req("spin", hooked))
			done <- err
		}()
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sh.helm.release.v1.spin.v1"}, &corev1.Secret{})).To(Succeed())
		}).Should(Succeed())
		kill()
		Eventually(done).Should(Receive(MatchError(context.Canceled)))
		// Eventually: the suite's manager renders other Environments in this process meanwhile; a child
		// HelmAction left behind (a zombie not waited for) would stay.
		Eventually(renderChildren).Should(BeEmpty())
		pending := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sh.helm.release.v1.spin.v1"}, pending)).To(Succeed())
		Expect(pending.Labels).To(HaveKeyWithValue("status", "pending-install"))

		By("the fixed chart installs over the pending revision, which is marked failed first")
		delete(files, "chart/templates/spin.yaml")
		res, err = render.HelmAction(ctx, limits, req("spin", files))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Outcome).To(Equal(render.HelmDeployed), "%+v", res)
		Expect(res.Recovered).To(Equal(1))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "spin-cm"}, &corev1.ConfigMap{})).To(Succeed())
	})
})
