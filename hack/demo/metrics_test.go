package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

func TestOperatorMetricsRows(t *testing.T) {
	const text = `# TYPE platform_operator_objects gauge
platform_operator_objects{kind="SojuBouncer",ready="True",reason="Ready"} 1
platform_operator_objects{kind="ErgoNetwork",ready="False",reason="DeploymentPending"} 0
platform_operator_objects{kind="ErgoNetwork",ready="True",reason="Ready"} 2
# TYPE platform_operator_reconcile_errors_total counter
platform_operator_reconcile_errors_total{kind="Project",reason="Conflict"} 0
# TYPE platform_operator_ready_duration_seconds histogram
platform_operator_ready_duration_seconds_bucket{kind="ErgoNetwork",le="+Inf"} 2
platform_operator_ready_duration_seconds_sum{kind="ErgoNetwork"} 3.5
platform_operator_ready_duration_seconds_count{kind="ErgoNetwork"} 2
platform_operator_ready_duration_seconds_bucket{kind="Domain",le="+Inf"} 0
platform_operator_ready_duration_seconds_sum{kind="Domain"} 0
platform_operator_ready_duration_seconds_count{kind="Domain"} 0
# TYPE workqueue_depth gauge
workqueue_depth{name="sojubouncer"} 3
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="sojubouncer",result="success"} 7
controller_runtime_reconcile_total{controller="sojubouncer",result="error"} 1
controller_runtime_reconcile_total{controller="ergonetwork",result="success"} 4
controller_runtime_reconcile_total{controller="ergonetwork",result="requeue_after"} 2
`
	m, err := localcluster.ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	rows, zero := operatorSeries(m)
	want := [][]string{
		{"platform_operator_objects", `kind="ErgoNetwork",ready="True",reason="Ready"`, "2"},
		{"platform_operator_objects", `kind="SojuBouncer",ready="True",reason="Ready"`, "1"},
		{"platform_operator_ready_duration_seconds", `kind="ErgoNetwork"`, "count 2, sum 3.5"},
	}
	if !reflect.DeepEqual(rows, want) || zero != 3 {
		t.Errorf("operatorSeries = %q, %d zero; want %q, 3 zero (other prefixes left out)", rows, zero, want)
	}
	wantReconciles := [][]string{
		{"ergonetwork", "4", "0", "0", "2"},
		{"sojubouncer", "7", "1", "0", "0"},
	}
	if got := reconcileRows(m); !reflect.DeepEqual(got, wantReconciles) {
		t.Errorf("reconcileRows = %q, want %q", got, wantReconciles)
	}

	// Before the operator registers any platform_operator_* metric: no rows, and still the reconciles.
	m, err = localcluster.ParseMetrics(strings.NewReader("# TYPE controller_runtime_reconcile_total counter\ncontroller_runtime_reconcile_total{controller=\"x\",result=\"success\"} 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rows, zero := operatorSeries(m); len(rows) != 0 || zero != 0 || len(reconcileRows(m)) != 1 {
		t.Errorf("without platform_operator_* metrics: rows %q, zero %d", rows, zero)
	}
}
