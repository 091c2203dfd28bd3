package main

import (
	"bytes"
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// dbAt is database 0 at generation gen whose status observed observed, Ready or not.
func dbAt(gen, observed int64, ready bool) *homelabv1.PostgresDatabase {
	db := (&postgresWorkload{}).database(benchNamespace, 0)
	db.Generation = gen
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	db.Status = homelabv1.PostgresDatabaseStatus{ObservedGeneration: observed,
		Conditions: []metav1.Condition{{Type: homelabv1.ConditionReady, Status: status}}}
	return db
}

// dbSecret is database 0's Secret as the operator writes it, answering rotation.
func dbSecret(rotation string) *corev1.Secret {
	db := (&postgresWorkload{}).database(benchNamespace, 0)
	return postgres.Secret(db, homelabv1.GroupVersion.WithKind("PostgresDatabase"), postgres.Settings{Host: "127.0.0.1", Port: 5432}, "role", "password", rotation)
}

// step is one object an observer sees, after an edit of the object named begins when edit > 0.
type step struct {
	obj  client.Object
	edit int // StartEdit(name, edit) before obj when > 0
	want Progress
}

// observe shows o the steps in order (StartEdit(name, edit) first where a step has an edit) and checks the
// Progress each returns.
func observe(t *testing.T, o Observer, name string, steps []step) {
	t.Helper()
	for i, s := range steps {
		if s.edit > 0 {
			o.StartEdit(name, s.edit)
		}
		if got := o.Observe(s.obj); got != s.want {
			t.Errorf("step %d: Observe(%T) = %+v, want %+v", i, s.obj, got, s.want)
		}
	}
}

func TestPostgresObserver(t *testing.T) {
	const name = "db-00000"
	tests := []struct {
		name  string
		steps []step
	}{
		{"converges with the Secret and Ready for its generation", []step{
			{obj: dbAt(1, 1, false), want: Progress{Name: name}},
			{obj: dbSecret(""), want: Progress{Name: name}},
			{obj: dbAt(1, 1, true), want: Progress{Name: name, Converged: true}},
		}},
		{"Ready without the Secret seen is not converged", []step{
			{obj: dbAt(1, 1, true), want: Progress{Name: name}},
		}},
		{"Ready for an older generation is not converged", []step{
			{obj: dbSecret(""), want: Progress{Name: name}},
			{obj: dbAt(2, 1, true), want: Progress{Name: name}},
		}},
		{"a rotation is written and applied with the Secret that answers it", []step{
			{obj: dbSecret(""), want: Progress{Name: name}},
			{obj: dbAt(1, 1, true), want: Progress{Name: name, Converged: true}},
			{edit: 3, obj: dbSecret(rotationMarker(2)), want: Progress{Name: name, Converged: true}},
			{obj: dbSecret(rotationMarker(3)), want: Progress{Name: name, Converged: true, Written: true, Applied: true}},
		}},
		{"a Secret of another application is none of the workload's", []step{
			{obj: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"app.kubernetes.io/instance": name}}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			observe(t, (&postgresWorkload{}).NewObserver(), name, tt.steps)
		})
	}
}

// TestPostgresCountersWithoutServer: before the first run starts the server, there is nothing to count
// and nothing to close.
func TestPostgresCountersWithoutServer(t *testing.T) {
	w := &postgresWorkload{}
	if c, err := w.Counters(); c != nil || err != nil {
		t.Errorf("Counters() = %v, %v; want nil, nil", c, err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

// checkSessionPoints checks a tiny run's session points: one per budget of -postgres-session-points, in
// order, each with both times and the server's counts; the floor's pool never logged in more often than
// its budget, and the operator ran at least the floor's writing statements.
func checkSessionPoints(t *testing.T, n int, e extra) {
	t.Helper()
	sp, ok := e.(*sessionPoints)
	if !ok || sp == nil {
		t.Fatalf("postgres session points: %#v, want *sessionPoints", e)
	}
	if sp.N != n || len(sp.Points) != len(pgSessionPoints) {
		t.Fatalf("session points at N = %d: %d points, want %d at N = %d", sp.N, len(sp.Points), len(pgSessionPoints), n)
	}
	for i, p := range sp.Points {
		if p.Sessions != pgSessionPoints[i] {
			t.Errorf("point %d: S = %d, want %d", i, p.Sessions, pgSessionPoints[i])
		}
		if p.Floor <= 0 || p.Operator <= 0 || p.OperatorCPU <= 0 {
			t.Errorf("S = %d: floor %s, operator %s, operator CPU %v", p.Sessions, p.Floor, p.Operator, p.OperatorCPU)
		}
		floorWrites, writes := p.FloorCounters["writing SQL statements"], p.Counters["writing SQL statements"]
		if floorWrites < float64(n) || writes < floorWrites {
			t.Errorf("S = %d: writing SQL statements: floor %v, operator %v; want the floor's at least one per database and the operator's at least the floor's",
				p.Sessions, floorWrites, writes)
		}
		if logins := p.FloorCounters["logins"]; logins < 1 || logins > float64(p.Sessions) {
			t.Errorf("S = %d: the floor logged in %v times, want 1 to S (a pool of S sessions)", p.Sessions, logins)
		}
	}
}

func TestSessionList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "1,4,8", want: []int{1, 4, 8}},
		{in: " 8, 1 ", want: []int{8, 1}},
		{in: "1,,64", want: []int{1, 64}},
		{in: ""},
		{in: "0", wantErr: true},
		{in: "65", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "four", wantErr: true},
		{in: "4,4", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			l := sessionList{2}
			err := l.Set(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Set(%q) = %v, want an error: %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr {
				if !slices.Equal(l, sessionList{2}) {
					t.Errorf("a refused Set(%q) changed the list to %v", tt.in, l)
				}
				return
			}
			if !slices.Equal(l, sessionList(tt.want)) {
				t.Errorf("Set(%q) = %v, want %v", tt.in, l, tt.want)
			}
			if got, want := l.String(), joinInts(tt.want); got != want {
				t.Errorf("String() = %q, want %q", got, want)
			}
		})
	}
	// The flag is registered with the default the brief of issue 35 asks for.
	if f := flag.Lookup("postgres-session-points"); f == nil || f.DefValue != "1,4,8" {
		t.Errorf("-postgres-session-points: %+v, want default 1,4,8", f)
	}
}

// TestPostgresBudget: a session point's budget is the connection's spec.maxSessions until the next one,
// and 0 puts -postgres-sessions back.
func TestPostgresBudget(t *testing.T) {
	w := &postgresWorkload{}
	maxSessions := func() int { return int(*w.connection(benchNamespace).Spec.MaxSessions) }
	if got := maxSessions(); got != *pgBudget {
		t.Errorf("spec.maxSessions = %d, want -postgres-sessions (%d)", got, *pgBudget)
	}
	w.setBudget(7)
	if got := maxSessions(); got != 7 {
		t.Errorf("after setBudget(7): spec.maxSessions = %d", got)
	}
	w.setBudget(0)
	if got := maxSessions(); got != *pgBudget {
		t.Errorf("after setBudget(0): spec.maxSessions = %d, want %d", got, *pgBudget)
	}
}

// TestPostgresMeasureNothing: without budgets or databases, the session points start nothing.
func TestPostgresMeasureNothing(t *testing.T) {
	w := &postgresWorkload{}
	r := &workloadRun{info: w.Info()}
	points, size := pgSessionPoints, *pgPointSize
	t.Cleanup(func() { pgSessionPoints, *pgPointSize = points, size })
	for _, tt := range []struct {
		points sessionList
		size   int
	}{{nil, 200}, {sessionList{1, 4}, 0}} {
		pgSessionPoints, *pgPointSize = tt.points, tt.size
		if e, err := w.Measure(context.Background(), r); e != nil || err != nil {
			t.Errorf("points %v at N = %d: Measure = %v, %v; want nothing", tt.points, tt.size, e, err)
		}
		if w.server != nil {
			t.Fatalf("points %v at N = %d: the server was started", tt.points, tt.size)
		}
	}
}

func TestSessionPointsRender(t *testing.T) {
	counts := func(statements, writes, logins float64) map[string]float64 {
		return map[string]float64{"SQL statements": statements, "writing SQL statements": writes, "logins": logins}
	}
	sp := &sessionPoints{N: 100, Points: []sessionPoint{
		{Sessions: 1, Floor: 10 * time.Second, Operator: 10500 * time.Millisecond,
			FloorCounters: counts(900, 700, 1), Counters: counts(1100, 700, 0), OperatorCPU: 1.24},
		{Sessions: 8, Floor: 4 * time.Second, Operator: 5 * time.Second,
			FloorCounters: counts(900, 700, 8), Counters: counts(1101, 700, 7), OperatorCPU: 2},
	}}
	var b bytes.Buffer
	sp.render(&b)
	for _, want := range []string{
		"#### Creates at each session budget (N = 100, same run)",
		"`-postgres-session-points=1,8`",
		"| S | floor | floor: databases/s | operator | operator: databases/s | **operator / floor** |",
		"| 1 | 10.0 s | 10.0 | 10.5 s | 9.5 | **1.05** | 9.00, 11.00 | 7.00, 7.00 | 1, 0 | 1.2 s |",
		"| 8 | 4000 ms | 25.0 | 5000 ms | 20.0 | **1.25** | 9.00, 11.01 | 7.00, 7.00 | 8, 7 | 2.0 s |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("render lacks %q:\n%s", want, b.String())
		}
	}

	// In the report, the points close the workload's section; a workload without any renders none.
	var doc bytes.Buffer
	renderWorkload(&doc, &config{}, &results{Workload: &postgresWorkload{}, Extra: sp})
	if !strings.Contains(doc.String(), "#### Creates at each session budget") {
		t.Errorf("the workload's section lacks its session points:\n%s", doc.String())
	}
	doc.Reset()
	renderWorkload(&doc, &config{}, &results{Workload: &postgresWorkload{}})
	if strings.Contains(doc.String(), "#### Creates at each session budget") {
		t.Errorf("a run without session points renders them:\n%s", doc.String())
	}
}
