package main

import (
	"testing"

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
