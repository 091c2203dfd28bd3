package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestPostgresOperation(t *testing.T) {
	tests := []struct{ stmt, want string }{
		{`CREATE ROLE "a" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD 'SCRAM-SHA-256$4096:...'`, OpCreateRole},
		{`ALTER ROLE "a" WITH LOGIN PASSWORD 'x'`, OpAlterRole},
		{`CREATE DATABASE "a" WITH OWNER "a" ALLOW_CONNECTIONS false`, OpCreateDatabase},
		{`ALTER DATABASE "a" OWNER TO "a"`, OpAlterDatabase},
		{`DROP DATABASE IF EXISTS "a" WITH (FORCE)`, OpDropDatabase},
		{`DROP ROLE IF EXISTS "a"`, OpDropRole},
		{`GRANT "a" TO CURRENT_USER WITH INHERIT FALSE, SET TRUE`, OpGrant},
		{`REVOKE ALL ON DATABASE "a" FROM PUBLIC`, OpRevoke},
		{`COMMENT ON ROLE "a" IS 'managed by platform-operator for ...'`, OpComment},
		{`SET ROLE "a"`, ""},
		{`RESET ROLE`, ""},
		{`VACUUM`, OpOther},
	}
	for _, tt := range tests {
		if got := PostgresOperation(tt.stmt); got != tt.want {
			t.Errorf("PostgresOperation(%.30q) = %q, want %q", tt.stmt, got, tt.want)
		}
	}
}

// counted says by how much c moved while f ran.
func counted(c prometheus.Collector, f func()) float64 {
	before := testutil.ToFloat64(c)
	f()
	return testutil.ToFloat64(c) - before
}

func TestRecorders(t *testing.T) {
	tests := []struct {
		name   string
		series prometheus.Collector
		record func()
		want   float64
	}{
		{"a statement", postgresOperations.WithLabelValues(OpDropRole, ResultFailed),
			func() { PostgresStatement(`DROP ROLE IF EXISTS "a"`, errors.New("in use")) }, 1},
		{"SET ROLE is not an operation", postgresOperations.WithLabelValues(OpOther, ResultSucceeded),
			func() { PostgresStatement(`SET ROLE "a"`, nil) }, 0},
		{"an admin login", postgresAdminLogins.WithLabelValues(ResultSucceeded), func() { AdminLogin(nil) }, 1},
		{"a deploy", catalystDeploys.WithLabelValues("kustomize", ResultSucceeded), func() { DeployFinished("kustomize", true) }, 1},
		// A type outside the enum must not become a label value: it is rendered as manifests.
		{"a deploy of an unknown type", catalystDeploys.WithLabelValues("manifest", ResultFailed), func() { DeployFinished("../../etc", false) }, 1},
		{"a refusal", catalystRefusals.WithLabelValues(RefusalDryRun), func() { Refused(RefusalDryRun) }, 1},
		{"an unknown check is not counted", catalystRefusals.WithLabelValues(RefusalPolicy), func() { Refused("policy2") }, 0},
		{"a build", catalystBuilds.WithLabelValues(ResultFailed), func() { BuildFinished(false, -1) }, 1},
		{"a rollout", ergoConfigRollouts.WithLabelValues(ResultSucceeded), func() { ErgoConfigRolledOut(true) }, 1},
	}
	for _, tt := range tests {
		if got := counted(tt.series, tt.record); got != tt.want {
			t.Errorf("%s: moved by %v, want %v", tt.name, got, tt.want)
		}
	}
	// A build of unknown duration is counted, not observed; one of known duration is both.
	samples := func() uint64 {
		m := &dto.Metric{}
		if err := catalystBuildDuration.WithLabelValues(ResultSucceeded).(prometheus.Metric).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	before := samples()
	BuildFinished(true, -1)
	BuildFinished(true, 90*time.Second)
	if n := samples() - before; n != 1 {
		t.Errorf("%d build durations observed, want 1", n)
	}
}
