//go:build linux

package e2e

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/platform-operator/platform-operator/test/alerts"
)

// The alerts (config/prometheus) and dashboards (config/grafana) name metrics; test/alerts checks the
// names against docs/metrics.md, and this spec checks them against what the operator really serves: a
// name the code does not export would make an alert that never fires. Every metric is on /metrics from
// the operator's start (docs/metrics.md), so nothing is created first, except one request to a webhook:
// controller-runtime's webhook counter has a series only once a request came.
var _ = Describe("metrics", func() {
	It("metric names: every metric an alert or a dashboard uses is exported by the operator from its start", func(ctx SpecContext) {
		_, promqlNames, err := alerts.Tools(repoRoot)
		Expect(err).NotTo(HaveOccurred())
		used, err := alerts.UsedMetrics(repoRoot, promqlNames)
		Expect(err).NotTo(HaveOccurred())
		Expect(used).NotTo(BeEmpty())

		ns := newNamespace(ctx, nil)
		token := metricsReaderToken(ctx, ns, "scraper")
		op := startMetricsOperator(ctx, "metric-names", operatorConfig{namespace: ns, secureMetrics: true, leaderElection: &testLease})
		Eventually(ctx, op.leading).Should(BeTrue(), "the operator never became leader")

		By("one request to a webhook, refused as malformed: controller-runtime counts it")
		Expect(op.WebhookAddr).NotTo(BeEmpty())
		Expect(postEmpty(ctx, "https://"+op.WebhookAddr+"/validate-homelab-mortenolsen-pro-v1-domain")).To(BeNumerically(">", 0))

		By("every name is served: itself, or the histogram its _bucket, _sum or _count series belongs to")
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
			g.Expect(missing).To(BeEmpty(), "not on /metrics")
		}).Should(Succeed())
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
