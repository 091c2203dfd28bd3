package instruments

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

func TestRefusalCheck(t *testing.T) {
	bindings := schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}
	pods := schema.GroupResource{Resource: "pods"}
	rbac := apierrors.NewForbidden(bindings, "own-the-cluster", errors.New(
		`User "system:serviceaccount:env-a:catalyst-deployer" cannot patch resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope`))
	podSecurity := apierrors.NewForbidden(pods, "root", errors.New(`violates PodSecurity "restricted:latest": privileged (container "root" must not set securityContext.privileged=true)`))
	quota := apierrors.NewForbidden(pods, "big", errors.New(`exceeded quota: env, requested: requests.cpu=64, used: requests.cpu=0, limited: requests.cpu=4`))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil)
	tests := []struct {
		name   string
		err    error
		dryRun bool
		want   string
	}{
		{"RBAC denial in the dry run", rbac, true, RefusalImpersonation},
		{"RBAC denial applying", rbac, false, RefusalImpersonation},
		{"RBAC denial wrapped by Helm as text", fmt.Errorf("failed to create resource: %s", rbac.Error()), false, RefusalImpersonation},
		// A 403 that is admission's, not the tenant's RBAC: the dry run refused it.
		{"Pod Security in the dry run", podSecurity, true, RefusalDryRun},
		{"quota in the dry run", quota, true, RefusalDryRun},
		{"validation in the dry run", invalid, true, RefusalDryRun},
		{"Pod Security outside the dry run", podSecurity, false, ""},
		// A message that quotes a user without being the authorizer's denial is not one.
		{"a 403 quoting a user", apierrors.NewForbidden(pods, "x", errors.New(`webhook says User "bob" is fine`)), false, ""},
		{"no error", nil, true, ""},
	}
	for _, tt := range tests {
		if got := RefusalCheck(tt.err, tt.dryRun); got != tt.want {
			t.Errorf("%s: RefusalCheck = %q, want %q", tt.name, got, tt.want)
		}
	}
}
