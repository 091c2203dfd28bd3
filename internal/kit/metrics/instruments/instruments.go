// Package instruments holds the counters and histograms that the code doing a thing records at the single
// point where it happens (a build finished, a Git fetch, a statement sent to PostgreSQL, an ergo config
// rolled out), with their label values. It is a leaf (it imports only Prometheus' client and
// apimachinery's errors), so clients such as internal/postgres and internal/catalyst/source record without
// pulling in internal/kit/metrics, which lists every API group and controller-runtime. kit/metrics'
// Register registers what Collectors returns.
package instruments

import (
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Namespace prefixes every metric of the operator's own.
const Namespace = "platform_operator"

// Result label values: how something the operator did ended.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

var results = []string{ResultSucceeded, ResultFailed}

// Check label values of platform_operator_catalyst_refusals_total: what refused a tenant's input.
const (
	// RefusalPolicy is render.Policy or a render guard (Helm's kube client, kustomize's remote bases)
	// refusing what a commit holds, before anything is sent.
	RefusalPolicy = "policy"
	// RefusalImpersonation is the API server refusing (403) an object sent as the tenant.
	RefusalImpersonation = "impersonation"
	// RefusalDryRun is the API server refusing an object of the whole-commit dry run for another reason
	// than RBAC (validation, admission, quota).
	RefusalDryRun = "dryrun"
)

var refusalChecks = []string{RefusalPolicy, RefusalImpersonation, RefusalDryRun}

// Deploy type label values: the catalyst Project's spec.deployment.type.
var deployTypes = []string{"helm", "manifest", "kustomize"}

// PostgreSQL operation label values, one per kind of statement the operator sends (SET ROLE and RESET
// ROLE only switch the session's role and are not counted).
const (
	OpCreateRole     = "create_role"
	OpAlterRole      = "alter_role"
	OpCreateDatabase = "create_database"
	OpAlterDatabase  = "alter_database"
	OpDropDatabase   = "drop_database"
	OpDropRole       = "drop_role"
	OpGrant          = "grant"
	OpRevoke         = "revoke"
	OpComment        = "comment"
	OpOther          = "other"
)

var postgresOps = []string{OpCreateRole, OpAlterRole, OpCreateDatabase, OpAlterDatabase, OpDropDatabase, OpDropRole,
	OpGrant, OpRevoke, OpComment, OpOther}

// DurationBuckets are for things that take seconds to tens of minutes: readiness, builds.
var DurationBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// requestBuckets are for one request to a remote server: a registry check, a Git fetch.
var requestBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

var (
	catalystBuilds = Counter("catalyst_builds_total", []string{"result"},
		"Catalyst image build Jobs finished, by result.")
	catalystBuildDuration = Histogram("catalyst_build_duration_seconds", DurationBuckets, []string{"result"},
		"Duration of catalyst image build Jobs (start to completion), by result.")
	catalystDeploys = Counter("catalyst_deploys_total", []string{"type", "result"},
		"Catalyst deploy attempts of a new commit or input, by deployment type and result.")
	catalystRefusals = Counter("catalyst_refusals_total", []string{"check"},
		"Tenant input refused, by the check that refused it: policy (render.Policy or a render guard), impersonation (403 as the tenant), dryrun (the whole-commit dry run).")
	catalystGitFetch = Histogram("catalyst_git_fetch_duration_seconds", requestBuckets, []string{"result"},
		"Latency of catalyst Git fetches of a commit not in the checkout cache, by result.")
	catalystRegistryCheck = Histogram("catalyst_registry_check_duration_seconds", requestBuckets, []string{"result"},
		"Latency of catalyst registry checks for an environment's image, by result (failed: the registry could not be asked or refused the credentials).")

	postgresOperations = Counter("postgres_operations_total", []string{"operation", "result"},
		"PostgreSQL statements the operator sent, by kind of statement and result.")
	postgresAdminLogins = Counter("postgres_admin_logins_total", []string{"result"},
		"Admin connections the operator opened to PostgreSQL servers (a pooled session reused is not one), by result.")
	ergoConfigRollouts = Counter("ergo_config_rollouts_total", []string{"result"},
		"ErgoNetwork config rollouts: a changed ircd.yaml written to its ConfigMap (which rolls ergo's pod), by result.")
)

// Counter is a counter vector of the operator's: name under Namespace, its labels and help.
func Counter(name string, labels []string, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

// Histogram is a histogram vector of the operator's: name under Namespace, its buckets, labels and help.
func Histogram(name string, buckets []float64, labels []string, help string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
}

// instruments are the counters and histograms of this package.
var instruments = []prometheus.Collector{
	catalystBuilds, catalystBuildDuration, catalystDeploys, catalystRefusals, catalystGitFetch, catalystRegistryCheck,
	postgresOperations, postgresAdminLogins, ergoConfigRollouts,
}

// Collectors returns the counters and histograms for kit/metrics' Register, each with its known label
// values at zero, so that each series is on /metrics from the start (rate() of a counter that appears at
// 1 misses that first increment).
func Collectors() []prometheus.Collector {
	for _, r := range results {
		catalystBuilds.WithLabelValues(r)
		catalystBuildDuration.WithLabelValues(r)
		catalystGitFetch.WithLabelValues(r)
		catalystRegistryCheck.WithLabelValues(r)
		postgresAdminLogins.WithLabelValues(r)
		ergoConfigRollouts.WithLabelValues(r)
		for _, t := range deployTypes {
			catalystDeploys.WithLabelValues(t, r)
		}
		for _, op := range postgresOps {
			postgresOperations.WithLabelValues(op, r)
		}
	}
	for _, c := range refusalChecks {
		catalystRefusals.WithLabelValues(c)
	}
	return instruments
}

func result(ok bool) string {
	if ok {
		return ResultSucceeded
	}
	return ResultFailed
}

// BuildFinished counts a catalyst build Job that finished, and its duration when known (d >= 0).
func BuildFinished(succeeded bool, d time.Duration) {
	r := result(succeeded)
	catalystBuilds.WithLabelValues(r).Inc()
	if d >= 0 {
		catalystBuildDuration.WithLabelValues(r).Observe(d.Seconds())
	}
}

// DeployFinished counts a catalyst deploy attempt of deployment type typ (helm, manifest, kustomize;
// anything else counts as manifest, which is how it is rendered).
func DeployFinished(typ string, succeeded bool) {
	switch typ {
	case "helm", "kustomize":
	default:
		typ = "manifest"
	}
	catalystDeploys.WithLabelValues(typ, result(succeeded)).Inc()
}

// Refused counts tenant input refused by check (RefusalPolicy, RefusalImpersonation, RefusalDryRun).
func Refused(check string) {
	switch check {
	case RefusalPolicy, RefusalImpersonation, RefusalDryRun:
		catalystRefusals.WithLabelValues(check).Inc()
	}
}

// authorizationDenial is how the API server's authorizer words a denial (403): User "name" cannot verb ...
var authorizationDenial = regexp.MustCompile(`User "[^"]*" cannot [a-z]+ `)

// RefusalCheck is the check label of the API server's refusal err of an object sent as the tenant (in
// the whole-commit dry run when dryRun): RefusalImpersonation for an authorization denial (the tenant's
// RBAC), RefusalDryRun for any other refusal in the dry run (admission such as Pod Security, quota,
// validation), and "" for what is neither (another refusal outside the dry run, which the dry run just
// passed, or no refusal at all).
func RefusalCheck(err error, dryRun bool) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		msg = status.Status().Message
	}
	switch {
	case authorizationDenial.MatchString(msg) && (apierrors.IsForbidden(err) || strings.Contains(err.Error(), "forbidden")):
		return RefusalImpersonation
	case dryRun:
		return RefusalDryRun
	}
	return ""
}

// GitFetched observes one Git fetch of a commit.
func GitFetched(succeeded bool, d time.Duration) {
	catalystGitFetch.WithLabelValues(result(succeeded)).Observe(d.Seconds())
}

// RegistryChecked observes one registry check for an image.
func RegistryChecked(succeeded bool, d time.Duration) {
	catalystRegistryCheck.WithLabelValues(result(succeeded)).Observe(d.Seconds())
}

// PostgresStatement counts one statement sent to PostgreSQL, classified by its first words (the statement
// itself, which may hold a password verifier, goes nowhere); err is what the server answered.
func PostgresStatement(stmt string, err error) {
	op := PostgresOperation(stmt)
	if op == "" {
		return
	}
	postgresOperations.WithLabelValues(op, result(err == nil)).Inc()
}

// PostgresOperation is the operation label of stmt; "" for the statements that are not counted (SET ROLE,
// RESET ROLE).
func PostgresOperation(stmt string) string {
	s := strings.ToUpper(strings.TrimSpace(stmt))
	for _, p := range []struct{ prefix, op string }{
		{"SET ROLE ", ""}, {"RESET ROLE", ""},
		{"CREATE ROLE ", OpCreateRole}, {"ALTER ROLE ", OpAlterRole},
		{"CREATE DATABASE ", OpCreateDatabase}, {"ALTER DATABASE ", OpAlterDatabase},
		{"DROP DATABASE ", OpDropDatabase}, {"DROP ROLE ", OpDropRole},
		{"GRANT ", OpGrant}, {"REVOKE ", OpRevoke}, {"COMMENT ON ", OpComment},
	} {
		if strings.HasPrefix(s, p.prefix) {
			return p.op
		}
	}
	return OpOther
}

// AdminLogin counts one admin connection opened to a PostgreSQL server; err is the connect's.
func AdminLogin(err error) {
	postgresAdminLogins.WithLabelValues(result(err == nil)).Inc()
}

// ErgoConfigRolledOut counts one ErgoNetwork config rollout.
func ErgoConfigRolledOut(succeeded bool) {
	ergoConfigRollouts.WithLabelValues(result(succeeded)).Inc()
}
