package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// operatorPrefix is the prefix of the operator's own metric names (the metric catalog's).
const operatorPrefix = "platform_operator_"

// reconcileResults are controller-runtime's result label values of controller_runtime_reconcile_total,
// the table's columns.
var reconcileResults = []string{"success", "error", "requeue", "requeue_after"}

// printOperatorMetrics reads the operator's /metrics once the scenarios played and prints what it says
// about them: every platform_operator_* series with a value (whichever this build registers; series
// still at zero are counted, not listed) and controller_runtime_reconcile_total per controller.
func printOperatorMetrics(ctx context.Context, p Printer, op *localcluster.Operator) error {
	p.Step("The operator's own metrics (http://%s/metrics)", op.MetricsAddr)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := op.Scrape(ctx)
	if err != nil {
		return fmt.Errorf("read the operator's metrics: %w", err)
	}
	rows, zero := operatorSeries(m)
	if len(rows) == 0 {
		p.Printf("no %s* series with a value (%d at zero): this build registers none yet, or nothing happened", operatorPrefix, zero)
	} else {
		p.Table([]string{"METRIC", "LABELS", "VALUE"}, rows)
		if zero > 0 {
			p.Printf("(%d more %s* series are at zero)", zero, operatorPrefix)
		}
	}
	p.Blank()
	p.Printf("controller_runtime_reconcile_total, by controller and result:")
	p.Table(append([]string{"CONTROLLER"}, reconcileResults...), reconcileRows(m))
	return nil
}

// operatorSeries are the rows of every platform_operator_* series with a non-zero value, by name and
// labels; a histogram or summary is shown by its count and sum. zero counts the series left out.
func operatorSeries(m localcluster.Metrics) (rows [][]string, zero int) {
	var names []string
	for name := range m {
		if strings.HasPrefix(name, operatorPrefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		fam := m[name]
		var famRows [][]string
		for _, s := range fam.GetMetric() {
			value, ok := seriesValue(fam.GetType(), s)
			if !ok {
				zero++
				continue
			}
			famRows = append(famRows, []string{name, labelString(s), value})
		}
		slices.SortFunc(famRows, func(a, b []string) int { return cmp.Compare(a[1], b[1]) })
		rows = append(rows, famRows...)
	}
	return rows, zero
}

// seriesValue formats one series' value; ok is false for a series at zero.
func seriesValue(t dto.MetricType, s *dto.Metric) (string, bool) {
	var v float64
	switch t {
	case dto.MetricType_COUNTER:
		v = s.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		v = s.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		v = s.GetUntyped().GetValue()
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := s.GetHistogram()
		if h.GetSampleCount() == 0 {
			return "", false
		}
		return fmt.Sprintf("count %d, sum %s", h.GetSampleCount(), formatFloat(h.GetSampleSum())), true
	case dto.MetricType_SUMMARY:
		sm := s.GetSummary()
		if sm.GetSampleCount() == 0 {
			return "", false
		}
		return fmt.Sprintf("count %d, sum %s", sm.GetSampleCount(), formatFloat(sm.GetSampleSum())), true
	}
	if v == 0 {
		return "", false
	}
	return formatFloat(v), true
}

// labelString is a series' labels as name="value" pairs in the order the format gives them (sorted).
func labelString(s *dto.Metric) string {
	var parts []string
	for _, lp := range s.GetLabel() {
		parts = append(parts, lp.GetName()+"="+strconv.Quote(lp.GetValue()))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// reconcileRows are controller_runtime_reconcile_total's values per controller (sorted) and result.
func reconcileRows(m localcluster.Metrics) [][]string {
	byResult := map[string]map[string]float64{}
	controllers := map[string]bool{}
	for _, r := range reconcileResults {
		byResult[r] = m.SumBy("controller_runtime_reconcile_total", "controller", map[string]string{"result": r})
		for c := range byResult[r] {
			controllers[c] = true
		}
	}
	var rows [][]string
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for c := range controllers {
			if !yield(c) {
				return
			}
		}
	}) {
		row := []string{c}
		for _, r := range reconcileResults {
			row = append(row, formatFloat(byResult[r][c]))
		}
		rows = append(rows, row)
	}
	return rows
}
