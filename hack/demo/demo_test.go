package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// TestDemo runs `make demo DEMO_ARGS=-only=irc` the way CI would, stopping as soon as it is up: the full
// local cluster (from $KUBEBUILDER_ASSETS, as `make test` sets it, else bin/k8s), the operator binary, the
// sample network becoming Ready, and a clean stop that leaves nothing running. Missing binaries fail it.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the full local cluster and the operator")
	}
	got := runScenario(t, "irc")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^######## Scenario 1 of 1, irc: `),
		regexp.MustCompile(`(?m)^    ErgoNetwork default/my-network +applied `),
		regexp.MustCompile(`(?m)^    status\.observedGeneration 1 = metadata\.generation after \d+\.\ds$`),
		regexp.MustCompile(`(?m)^    DeploymentAvailable=True after `),
		regexp.MustCompile(`(?m)^    Certificate my-network: Ready=True \(set by the demo\)$`),
		regexp.MustCompile(`(?m)^    Ready=True after `),
		regexp.MustCompile(`(?m)^    my-network +my-network\.irc\.example\.com +MyNetwork +True `),
		regexp.MustCompile(`(?m)^    Deployment/my-network +apps/v1$`),
		regexp.MustCompile(`(?m)^    my-network-\S+ +1/1 +Running +\S+ +kwok-node `),
		regexp.MustCompile(`(?m)^    network: *$`),
		regexp.MustCompile(`(?m)^    Ready is True: `),
		regexp.MustCompile(`(?m)^    irc +ErgoNetwork default/my-network +Ready=True +\d+\.\ds after the apply$`),
		regexp.MustCompile(`(?m)^    nothing left behind: `),
	} {
		if !want.MatchString(got) {
			t.Errorf("the output has no line matching %s", want)
		}
	}
	if strings.Contains(got, "ERROR") {
		t.Errorf("the output reports an error")
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}

// TestDemoSoju runs the soju scenario alone as `make demo DEMO_ARGS=-only=soju` would: a real PostgreSQL
// started, and the admin connection Secret pointed at it, before the sample bouncer is applied, so that the
// bouncer's events hold no Warning (the operator never saw the sample's placeholder server); the bouncer
// Ready, its database made and logged in to. Missing binaries (PostgreSQL) fail it.
func TestDemoSoju(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the full local cluster, the operator and PostgreSQL")
	}
	got := runScenario(t, "soju")
	for _, want := range []string{
		`(?m)^######## Scenario 1 of 1, soju: `,
		`(?m)^    PostgreSQL listens on 127\.0\.0\.1:\d+ `,
		`(?m)^    Secret soju-db-admin: host, port, user, password, sslmode=disable$`,
		`(?m)^    SojuBouncer default/my-bouncer +applied `,
		`(?m)^    Ready=True after `,
		`(?m)^    CURRENT_USER +CURRENT_DATABASE\(\) +DATABASE OWNER$`,
		`(?m)^==> Recent events for SojuBouncer my-bouncer$`,
		`(?m)^    nothing left behind: `,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("the output has no line matching %s", want)
		}
	}
	// The server and its Secret come before the bouncer: the operator's first reconcile finds them.
	if secret, bouncer := strings.Index(got, "Secret soju-db-admin: host"), strings.Index(got, "SojuBouncer default/my-bouncer"); secret < 0 || bouncer < secret {
		t.Errorf("the admin connection Secret (at %d) is not written before the bouncer is applied (at %d)", secret, bouncer)
	}
	if w := warningEvents(got); len(w) > 0 {
		t.Errorf("the scenario's events hold Warnings, a false alarm on a newcomer's first screen:\n%s", strings.Join(w, "\n"))
	}
	if strings.Contains(got, "ERROR") {
		t.Errorf("the output reports an error")
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}

// warningEvents are the rows of type Warning in the output's event tables (Printer.Events).
func warningEvents(out string) []string {
	var rows []string
	in := false
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "==> ") {
			in = strings.HasPrefix(line, "==> Recent events for ")
			continue
		}
		if f := strings.Fields(line); in && len(f) >= 2 && f[1] == "Warning" {
			rows = append(rows, strings.TrimSpace(line))
		}
	}
	return rows
}

func TestWarningEvents(t *testing.T) {
	out := `
==> Recent events for SojuBouncer my-bouncer
    LAST SEEN   TYPE      REASON            MESSAGE
    12s         Warning   DatabaseFailed    cannot log in to postgres.databases.svc.cluster.local:5432 (x3)
    3s          Normal    DatabaseCreated   made database soju_default_my_bouncer

==> Conditions of SojuBouncer my-bouncer
    Warning   is not an event here
`
	// The control: a Warning row in an event table is found, a Warning outside one is not.
	if got := warningEvents(out); len(got) != 1 || !strings.Contains(got[0], "DatabaseFailed") {
		t.Errorf("warningEvents = %q, want the one DatabaseFailed row", got)
	}
	if got := warningEvents(strings.Replace(out, "Warning   DatabaseFailed", "Normal    DatabaseFailed", 1)); len(got) != 0 {
		t.Errorf("warningEvents = %q on Normal events only", got)
	}
}

// TestDemoBackup runs the backup scenario alone as `make demo DEMO_ARGS=-only=backup` would: a real S3
// server and PostgreSQL, a Backup whose Job runs on this machine, a restore into a new database whose rows
// are read back, and an ErgoNetwork's datastore backed up. Missing binaries (versitygw, PostgreSQL) fail it.
func TestDemoBackup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the full local cluster, the operator, versitygw and PostgreSQL")
	}
	got := runScenario(t, "backup")
	row := func(id, customer, total string) string {
		return `(?m)^    ` + id + ` +` + customer + ` +` + regexp.QuoteMeta(total) + `$`
	}
	for _, want := range []string{
		`(?m)^######## Scenario 1 of 1, backup: `,
		`(?m)^    versitygw listens on http://127\.0\.0\.1:\d+ `,
		`(?m)^    rows in shop \(SELECT \* FROM orders\):$`,
		`(?m)^    Job shop-now-backup: image \S+postgres:\d+, `,
		`the Job ran LOCALLY`,
		`(?m)^    Job shop-now-backup: status written by the demo \(Complete\)$`,
		`(?m)^    shop-now +PostgresDatabase +shop +Completed +\d+ +[0-9a-f]{64} +\S+ +s3://demo-backups/demo/default/PostgresDatabase/shop/`,
		`(?m)^    Job shop-restored-restore: status written by the demo \(Complete\)$`,
		`(?m)^    status\.restoredFrom: backup shop-now, store demo-s3, source shop, id \S+$`,
		`(?m)^    rows read back from shop-restored, as its own role \(SELECT \* FROM orders\):$`,
		`(?m)^    ircd\.db: 3 accounts, 2 channels$`,
		`(?m)^    backup-demo-net-now +ErgoNetwork +backup-demo-net +Completed +\d+ +[0-9a-f]{64} `,
		`(?m)^    the operator made the claim and the restore Job; ergo's Deployment does not exist yet`,
		`(?m)^    Job backup-demo-net-restored-datastore-restore: status written by the demo \(Complete\)$`,
		`(?m)^    status\.restoredFrom: backup backup-demo-net-now, store demo-s3, source backup-demo-net, id \S+$`,
		`(?m)^    the new claim's ircd\.db, opened with buntdb: 3 accounts, 2 channels `,
		`(?m)^    nothing left behind: `,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("the output has no line matching %s", want)
		}
	}
	// The rows are printed twice: written into shop, read back from shop-restored.
	for _, r := range []string{row("1", "ada", "12.50"), row("2", "grace", "7.25"), row("3", "linus", "99.99")} {
		if n := len(regexp.MustCompile(r).FindAllString(got, -1)); n != 2 {
			t.Errorf("row %s printed %d times, want 2 (written, then read back from the restored database)", r, n)
		}
	}
	if strings.Contains(got, "ERROR") {
		t.Errorf("the output reports an error")
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}

// operatorBinary is $OPERATOR_BINARY (make sets it to bin/platform-operator), else a fresh build.
func operatorBinary(t *testing.T, root string) string {
	if p := os.Getenv("OPERATOR_BINARY"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "platform-operator")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}

// runScenario runs the one scenario name as `make demo DEMO_ARGS=-only=<name>` would, stopping as soon as
// it is up (the full local cluster, the operator binary, a clean stop), and returns what it printed; a
// demo that exits non-zero fails the test.
func runScenario(t *testing.T, name string) string {
	t.Helper()
	root := testutil.RepoRoot(t)
	scenarios, err := selectScenarios(registry, name)
	if err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	var out bytes.Buffer
	code := run(options{root: root, operator: operatorBinary(t, root), operatorLog: filepath.Join(logDir, "operator.log"),
		logDir: logDir, exitAfter: time.Millisecond, wait: 60 * time.Second, scenarios: scenarios, out: &out})
	if code != 0 {
		t.Fatalf("the demo exited with %d:\n%s", code, out.String())
	}
	return out.String()
}
