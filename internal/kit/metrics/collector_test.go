package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// testScheme holds the operator's API kinds only.
var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(ircv1.AddToScheme(s))
	utilruntime.Must(homelabv1.AddToScheme(s))
	utilruntime.Must(catalystv1.AddToScheme(s))
	utilruntime.Must(iotv1.AddToScheme(s))
	return s
}()

// clock is the tests' now.
var clock = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(clock.Add(-d)) }

func cond(t string, s metav1.ConditionStatus, reason string, since time.Duration) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, LastTransitionTime: ago(since), Message: "m"}
}

func objectMeta(ns, name string, created time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: ago(created), Generation: 1, UID: types.UID("uid-" + ns + "-" + name)}
}

func reader(objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(testScheme).WithObjects(objs...).Build()
}

func collector(r client.Reader, kinds ...*Kind) *Collector {
	c := NewCollector(r, nil, kinds...)
	c.now = func() time.Time { return clock }
	return c
}

func TestCollectorObjects(t *testing.T) {
	ready := &ircv1.ErgoNetwork{ObjectMeta: objectMeta("a", "ready", time.Hour),
		Status: ircv1.ErgoNetworkStatus{Conditions: []metav1.Condition{cond("Ready", metav1.ConditionTrue, "Ready", 50*time.Minute)}}}
	pending := &ircv1.ErgoNetwork{ObjectMeta: objectMeta("a", "pending", time.Hour),
		Status: ircv1.ErgoNetworkStatus{Conditions: []metav1.Condition{cond("Ready", metav1.ConditionFalse, "DeploymentPending", 10*time.Minute)}}}
	stuck := &ircv1.ErgoNetwork{ObjectMeta: objectMeta("b", "stuck", 2*time.Hour),
		Status: ircv1.ErgoNetworkStatus{Conditions: []metav1.Condition{
			cond("Ready", metav1.ConditionFalse, "Waiting", 30*time.Minute),
			cond(ircv1.ConditionOperCredentials, metav1.ConditionFalse, ircv1.ReasonSecretNotFound, 30*time.Minute),
		}}}
	// Never reconciled: no condition, not ready since its creation.
	fresh := &ircv1.ErgoNetwork{ObjectMeta: objectMeta("b", "fresh", 3*time.Minute)}

	c := collector(reader(ready, pending, stuck, fresh), ErgoNetwork, RedisConnection)
	want := `
# HELP platform_operator_objects Objects of each API kind by their Ready condition's status and reason (no Ready condition: ready="Unknown", reason="NoCondition").
# TYPE platform_operator_objects gauge
platform_operator_objects{kind="ErgoNetwork",ready="False",reason="DeploymentPending"} 1
platform_operator_objects{kind="ErgoNetwork",ready="False",reason="Waiting"} 1
platform_operator_objects{kind="ErgoNetwork",ready="True",reason="Ready"} 1
platform_operator_objects{kind="ErgoNetwork",ready="Unknown",reason="NoCondition"} 1
platform_operator_objects{kind="RedisConnection",ready="Unknown",reason="NoCondition"} 0
# HELP platform_operator_objects_not_ready_seconds Age of the oldest current not-Ready state among the objects of a kind: now minus the Ready condition's lastTransitionTime (or the creation); 0 when all are Ready.
# TYPE platform_operator_objects_not_ready_seconds gauge
platform_operator_objects_not_ready_seconds{kind="ErgoNetwork"} 1800
platform_operator_objects_not_ready_seconds{kind="RedisConnection"} 0
# HELP platform_operator_dependency_waits Objects waiting for a dependency (missing, or not Ready yet), by kind and the dependency's kind.
# TYPE platform_operator_dependency_waits gauge
platform_operator_dependency_waits{dependency="Secret",kind="ErgoNetwork"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestCollectorCleanupsAndDependencies(t *testing.T) {
	deleting := func(name string, cleanup metav1.Condition) *ircv1.SojuBouncer {
		m := objectMeta("a", name, time.Hour)
		m.DeletionTimestamp, m.Finalizers = ptr.To(ago(time.Minute)), []string{ircv1.SojuDatabaseFinalizer}
		return &ircv1.SojuBouncer{ObjectMeta: m, Status: ircv1.SojuBouncerStatus{Conditions: []metav1.Condition{cleanup}}}
	}
	objs := []client.Object{
		deleting("blocked", cond(ircv1.ConditionCleanup, metav1.ConditionFalse, ircv1.ReasonCleanupBlocked, time.Minute)),
		// Waiting for soju's Deployment to go is the cleanup's normal order, not a block.
		deleting("waiting", cond(ircv1.ConditionCleanup, metav1.ConditionFalse, ircv1.ReasonWaitingForDeployment, time.Minute)),
		// Control: the same condition on an object not being deleted is not a cleanup.
		&ircv1.SojuBouncer{ObjectMeta: objectMeta("a", "live", time.Hour), Status: ircv1.SojuBouncerStatus{Conditions: []metav1.Condition{
			cond(ircv1.ConditionCleanup, metav1.ConditionFalse, ircv1.ReasonCleanupBlocked, time.Minute)}}},
		&homelabv1.AuthentikServer{ObjectMeta: objectMeta("a", "auth", time.Hour), Status: homelabv1.AuthentikServerStatus{Conditions: []metav1.Condition{
			cond(homelabv1.ConditionDomain, metav1.ConditionFalse, homelabv1.ReasonMissingDependency, time.Minute),
			cond(homelabv1.ConditionDatabase, metav1.ConditionFalse, homelabv1.ReasonWaitingForDependency, time.Minute),
			// Not a wait: refused, which only a spec change fixes.
			cond(homelabv1.ConditionRedis, metav1.ConditionFalse, homelabv1.ReasonDependencyNotAllowed, time.Minute),
		}}},
	}
	c := collector(reader(objs...), SojuBouncer, AuthentikServer)
	want := `
# HELP platform_operator_cleanups_blocked Objects being deleted whose cleanup is blocked: a finalizer held and the cleanup condition not True (and not merely waiting its turn).
# TYPE platform_operator_cleanups_blocked gauge
platform_operator_cleanups_blocked{kind="SojuBouncer"} 1
# HELP platform_operator_dependency_waits Objects waiting for a dependency (missing, or not Ready yet), by kind and the dependency's kind.
# TYPE platform_operator_dependency_waits gauge
platform_operator_dependency_waits{dependency="Domain",kind="AuthentikServer"} 1
platform_operator_dependency_waits{dependency="PostgresDatabase",kind="AuthentikServer"} 1
platform_operator_dependency_waits{dependency="RedisConnection",kind="AuthentikServer"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "platform_operator_cleanups_blocked", "platform_operator_dependency_waits"); err != nil {
		t.Error(err)
	}
}

func TestCollectorDomainsAndEnvironments(t *testing.T) {
	domain := func(name string, conds ...metav1.Condition) *homelabv1.Domain {
		return &homelabv1.Domain{ObjectMeta: objectMeta("a", name, time.Hour), Status: homelabv1.DomainStatus{Conditions: conds}}
	}
	env := func(name string, typ catalystv1.EnvironmentType, phase catalystv1.Phase) *catalystv1.Environment {
		return &catalystv1.Environment{ObjectMeta: objectMeta("a", name, time.Hour),
			Spec: catalystv1.EnvironmentSpec{ProjectRef: catalystv1.ProjectReference{Name: "p"}, Type: typ}, Status: catalystv1.EnvironmentStatus{Phase: phase}}
	}
	objs := []client.Object{
		domain("issued", cond(homelabv1.ConditionCertificate, metav1.ConditionTrue, "Ready", time.Minute)),
		domain("pending", cond(homelabv1.ConditionCertificate, metav1.ConditionFalse, homelabv1.ReasonCertificatePending, time.Minute)),
		domain("new"),
		env("pr-1", catalystv1.EnvironmentDevelopment, catalystv1.PhaseReady),
		env("pr-2", "", ""), // the CRD's default type; not reconciled yet: Pending
		env("prod", catalystv1.EnvironmentDeployment, catalystv1.PhaseFailed),
	}
	c := collector(reader(objs...), Domain, Environment)
	var want strings.Builder
	want.WriteString(`
# HELP platform_operator_domain_certificates Domains by their Certificate condition's status (no condition: Unknown).
# TYPE platform_operator_domain_certificates gauge
platform_operator_domain_certificates{ready="False"} 1
platform_operator_domain_certificates{ready="True"} 1
platform_operator_domain_certificates{ready="Unknown"} 1
# HELP platform_operator_catalyst_environments Catalyst Environments by status.phase (none yet: Pending) and spec.type.
# TYPE platform_operator_catalyst_environments gauge
`)
	counts := map[string]int{"Ready/development": 1, "Pending/development": 1, "Failed/deployment": 1}
	for _, p := range phases {
		for _, typ := range environmentTypes {
			fmt.Fprintf(&want, "platform_operator_catalyst_environments{phase=%q,type=%q} %d\n", p, typ, counts[p+"/"+typ])
		}
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want.String()),
		"platform_operator_domain_certificates", "platform_operator_catalyst_environments"); err != nil {
		t.Error(err)
	}
}

// A status someone else wrote must not make the reason label unbounded: a value that is no reason, and
// the reasons beyond maxReasons, count as Other. Control: an ordinary reason stays as it is.
func TestCollectorBoundsReasons(t *testing.T) {
	var objs []client.Object
	redis := func(name, reason string) *homelabv1.RedisConnection {
		return &homelabv1.RedisConnection{ObjectMeta: objectMeta("a", name, time.Hour), Status: homelabv1.RedisConnectionStatus{
			Conditions: []metav1.Condition{cond("Ready", metav1.ConditionFalse, reason, time.Minute)}}}
	}
	objs = append(objs, redis("secret", "password=hunter2 host=10.0.0.1"), redis("ordinary", "Unreachable"))
	for i := range maxReasons + 5 {
		objs = append(objs, redis(fmt.Sprintf("r%d", i), fmt.Sprintf("Reason%d", i)))
	}
	c := collector(reader(objs...), RedisConnection)
	got, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "platform_operator_objects")
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	if strings.Contains(text, "hunter2") || !strings.Contains(text, `reason="Other"`) {
		t.Errorf("a reason that is not one must count as Other:\n%s", text)
	}
	// The no-condition series, Other, and at most maxReasons reasons of the kind's own.
	if n := strings.Count(text, "platform_operator_objects{"); n > maxReasons+2 {
		t.Errorf("%d series for one kind, want at most %d:\n%s", n, maxReasons+2, text)
	}
	var total float64
	for _, line := range strings.Split(text, "\n") {
		var v float64
		if i := strings.LastIndexByte(line, ' '); strings.HasPrefix(line, "platform_operator_objects{") && i > 0 {
			_, _ = fmt.Sscan(line[i+1:], &v)
			total += v
		}
	}
	if int(total) != len(objs) {
		t.Errorf("the series add up to %v objects, want %d: bounding must not lose objects", total, len(objs))
	}
}

// A standby replica (not elected) reports no object gauges; the leader does.
func TestCollectorWaitsForElection(t *testing.T) {
	elected := make(chan struct{})
	c := NewCollector(reader(), elected, ErgoNetwork)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("%d series before the election, want none", n)
	}
	close(elected)
	if n := testutil.CollectAndCount(c); n == 0 {
		t.Error("no series once elected")
	}
}

func TestKindsOf(t *testing.T) {
	var names []string
	for _, k := range KindsOf("irc", "catalyst") {
		names = append(names, k.Name)
	}
	if got := strings.Join(names, ","); got != "ErgoNetwork,SojuBouncer,Project,Environment" {
		t.Errorf("KindsOf(irc, catalyst) = %s", got)
	}
	if len(AllKinds) != 10 {
		t.Errorf("%d kinds, want the operator's 10", len(AllKinds))
	}
	for _, k := range AllKinds {
		if obj, list := k.newObject(), k.newList(); obj == nil || list == nil || k.status(obj).Conditions != nil {
			t.Errorf("kind %s: an empty object must read as an empty status", k.Name)
		}
	}
}
