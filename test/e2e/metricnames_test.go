//go:build linux

package e2e

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/test/alerts"
)

// The alerts (config/prometheus) and dashboards (config/grafana) name metrics; test/alerts checks the
// names against docs/metrics.md, and this spec checks them against what the operator really serves: a
// name the code does not export would make an alert that never fires. Every metric is on /metrics from
// the operator's start (docs/metrics.md) with two exceptions this spec provides for: the fleet's
// per-Deployment gauges have series only for existing iot Deployments (docs/metrics.md, Fleet), so one is
// created; the backup gauges have series only for sources with a finished Backup and for existing
// BackupSchedules (docs/metrics.md, Backups), so a schedule and a Backup are made and the Backup's status
// written as a Job and a drill would leave it; and controller-runtime's webhook counter has a series only
// once a request came, so one is sent.
var _ = Describe("metrics", func() {
	It("metric names: every metric an alert or a dashboard uses is exported by the operator", func(ctx SpecContext) {
		_, promqlNames, err := alerts.Tools(repoRoot)
		Expect(err).NotTo(HaveOccurred())
		used, err := alerts.UsedMetrics(repoRoot, promqlNames)
		Expect(err).NotTo(HaveOccurred())
		Expect(used).NotTo(BeEmpty())

		ns := newNamespace(ctx, nil)
		token := metricsReaderToken(ctx, ns, "scraper")
		// For the whole cluster, as the alerts and dashboards expect it (a namespace-scoped operator runs no
		// Catalyst controller and reports no Environments), and leader: the object gauges are the leader's.
		op := startMetricsOperator(ctx, "metric-names", operatorConfig{secureMetrics: true,
			leaderElection: &testLease, args: []string{"--iot-fleet-policy=" + ns + "=fleet:" + ns}})
		Expect(k8s.Create(ctx, fleettest.Deployment(ns, "web", ns, "registry.example/web:1"))).To(Succeed())

		By("a BackupSchedule, and a Backup finished and drilled: the backup gauges have series")
		source := backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "db"}
		Expect(k8s.Create(ctx, &backupv1.BackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
			Spec: backupv1.BackupScheduleSpec{Source: source, Store: "store", Schedule: "0 3 * * *"}})).To(Succeed())
		b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "done"},
			Spec: backupv1.BackupSpec{Source: source, Store: "store"}}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		// The operator writes the Backup's first status (Pending: the store does not exist) from what it read
		// before; the finished status is written after it, or that first write could replace it.
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			g.Expect(meta.FindStatusCondition(b.Status.Conditions, backupv1.ConditionStore)).NotTo(BeNil())
		}).WithTimeout(60 * time.Second).Should(Succeed())
		Eventually(ctx, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			start := metav1.NewTime(time.Now().Add(-time.Minute))
			end := metav1.Now()
			b.Status.Phase, b.Status.StartTime, b.Status.CompletionTime, b.Status.Size = backupv1.BackupCompleted, &start, &end, 1024
			b.Status.Verification = &backupv1.BackupVerification{Result: backupv1.VerificationVerified, CompletionTime: &end,
				RecoveryTime: &metav1.Duration{Duration: 3 * time.Second}}
			return k8s.Status().Update(ctx, b)
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("one request to a webhook, refused as malformed: controller-runtime counts it")
		Expect(op.WebhookAddr).NotTo(BeEmpty())
		Expect(postEmpty(ctx, "https://"+op.WebhookAddr+"/validate-homelab-mortenolsen-pro-v1-domain")).To(BeNumerically(">", 0))

		By("every name is served (the object gauges once the operator leads): itself, or the histogram its _bucket, _sum or _count series belongs to")
		// The spec's context has no deadline, so Eventually gets one of its own.
		Eventually(ctx, func(g Gomega) {
			r := get(ctx, http1Client, "https://"+op.MetricsAddr+"/metrics", token)
			g.Expect(r.err).NotTo(HaveOccurred())
			g.Expect(r.code).To(Equal(http.StatusOK), r.body)
			exported := exportedNames(r.body)
			var missing []string
			for _, m := range used {
				if slices.Contains(alerts.Scraped, m.Name) {
					continue
				}
				if !slices.ContainsFunc(alerts.SeriesFamilies(m.Name), func(f string) bool { return exported[f] }) {
					missing = append(missing, m.Name+" (used by "+strings.Join(m.Where, "; ")+")")
				}
			}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			g.Expect(missing).To(BeEmpty(), "not on /metrics (the Backup's phase: %q)", b.Status.Phase)
		}).WithTimeout(90 * time.Second).Should(Succeed())

		By("control: the same reading of a scrape misses a misspelt name and finds a histogram by its # TYPE line")
		r := get(ctx, http1Client, "https://"+op.MetricsAddr+"/metrics", token)
		Expect(r.err).NotTo(HaveOccurred())
		exported := exportedNames(r.body)
		Expect(exported).NotTo(HaveKey("platform_operator_reconcile_error_total"))
		Expect(exported).To(HaveKey("platform_operator_ready_duration_seconds"))
	})
})

// exportedNames are the metric families of a scrape in Prometheus' text format (their # TYPE lines) and
// the names of its series.
func exportedNames(body string) map[string]bool {
	GinkgoHelper()
	out := map[string]bool{}
	s := bufio.NewScanner(strings.NewReader(body))
	s.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for s.Scan() {
		line := s.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, _, ok := strings.Cut(rest, " "); ok {
				out[name] = true
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	Expect(s.Err()).NotTo(HaveOccurred())
	return out
}

// postEmpty sends an empty POST to a webhook path and returns the status code.
func postEmpty(ctx context.Context, url string) int {
	GinkgoHelper()
	Expect(url).To(HavePrefix("https://127.0.0.1:"), "this test talks to loopback only")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http1Client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Body.Close()).To(Succeed())
	return resp.StatusCode
}
