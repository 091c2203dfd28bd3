package metrics

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// Reader is what the collector and the reconcile wrapper read objects with: the manager's cache in the
// operator (its client), so that a scrape costs no request to the API server.
type Reader = client.Reader

// Status is what the metrics read of any kind's status: its conditions and observedGeneration.
type Status struct {
	Conditions         []metav1.Condition
	ObservedGeneration int64
}

// Wait is one dependency an object of a kind may wait for: its condition Condition with one of Reasons.
type Wait struct {
	Condition  string
	Reasons    []string
	Dependency string
}

// Cleanup says how a kind reports the cleanup its finalizer holds it for: condition Condition, blocked
// while not True unless its reason is one of Waiting (a cleanup that is only waiting its turn).
type Cleanup struct {
	Condition string
	Waiting   []string
}

// Kind is one API kind of the operator as the metrics see it; every kind is read the same way, through
// status.
type Kind struct {
	// Name is the kind label's value.
	Name string
	// Group is the API group's short name (irc, iot, homelab, catalyst), as KindsOf selects kinds.
	Group string

	newObject func() client.Object
	newList   func() client.ObjectList
	status    func(client.Object) Status
	// cleanup is nil for a kind without a cleanup condition.
	cleanup *Cleanup
	waits   []Wait
	// ready tracks readiness per object for platform_operator_ready_duration_seconds.
	ready *readyTracker
}

// typed turns a typed status accessor into one of any object (the zero Status for another type).
func typed[T client.Object](f func(T) ([]metav1.Condition, int64)) func(client.Object) Status {
	return func(o client.Object) Status {
		t, ok := o.(T)
		if !ok {
			return Status{}
		}
		c, g := f(t)
		return Status{Conditions: c, ObservedGeneration: g}
	}
}

func newKind(name, group string, obj func() client.Object, list func() client.ObjectList, status func(client.Object) Status) *Kind {
	return &Kind{Name: name, Group: group, newObject: obj, newList: list, status: status, ready: newReadyTracker()}
}

// The operator's API kinds, one entry each.
var (
	ErgoNetwork = newKind("ErgoNetwork", "irc",
		func() client.Object { return &ircv1.ErgoNetwork{} }, func() client.ObjectList { return &ircv1.ErgoNetworkList{} },
		typed(func(o *ircv1.ErgoNetwork) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	SojuBouncer = newKind("SojuBouncer", "irc",
		func() client.Object { return &ircv1.SojuBouncer{} }, func() client.ObjectList { return &ircv1.SojuBouncerList{} },
		typed(func(o *ircv1.SojuBouncer) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	Deployment = newKind("Deployment", "iot",
		func() client.Object { return &iotv1.Deployment{} }, func() client.ObjectList { return &iotv1.DeploymentList{} },
		typed(func(o *iotv1.Deployment) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	PostgresConnection = newKind("PostgresConnection", "homelab",
		func() client.Object { return &homelabv1.PostgresConnection{} }, func() client.ObjectList { return &homelabv1.PostgresConnectionList{} },
		typed(func(o *homelabv1.PostgresConnection) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	PostgresDatabase = newKind("PostgresDatabase", "homelab",
		func() client.Object { return &homelabv1.PostgresDatabase{} }, func() client.ObjectList { return &homelabv1.PostgresDatabaseList{} },
		typed(func(o *homelabv1.PostgresDatabase) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	RedisConnection = newKind("RedisConnection", "homelab",
		func() client.Object { return &homelabv1.RedisConnection{} }, func() client.ObjectList { return &homelabv1.RedisConnectionList{} },
		typed(func(o *homelabv1.RedisConnection) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	Domain = newKind("Domain", "homelab",
		func() client.Object { return &homelabv1.Domain{} }, func() client.ObjectList { return &homelabv1.DomainList{} },
		typed(func(o *homelabv1.Domain) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	AuthentikServer = newKind("AuthentikServer", "homelab",
		func() client.Object { return &homelabv1.AuthentikServer{} }, func() client.ObjectList { return &homelabv1.AuthentikServerList{} },
		typed(func(o *homelabv1.AuthentikServer) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	Project = newKind("Project", "catalyst",
		func() client.Object { return &catalystv1.Project{} }, func() client.ObjectList { return &catalystv1.ProjectList{} },
		typed(func(o *catalystv1.Project) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
	Environment = newKind("Environment", "catalyst",
		func() client.Object { return &catalystv1.Environment{} }, func() client.ObjectList { return &catalystv1.EnvironmentList{} },
		typed(func(o *catalystv1.Environment) ([]metav1.Condition, int64) {
			return o.Status.Conditions, o.Status.ObservedGeneration
		}))
)

// AllKinds are the operator's API kinds in a stable order.
var AllKinds = []*Kind{ErgoNetwork, SojuBouncer, Deployment, PostgresConnection, PostgresDatabase, RedisConnection, Domain,
	AuthentikServer, Project, Environment}

func init() {
	// What each kind waits for and how it reports its cleanup: a table, read by one collector.
	ErgoNetwork.waits = []Wait{{Condition: ircv1.ConditionOperCredentials, Reasons: []string{ircv1.ReasonSecretNotFound}, Dependency: "Secret"}}
	SojuBouncer.cleanup = &Cleanup{Condition: ircv1.ConditionCleanup, Waiting: []string{ircv1.ReasonWaitingForDeployment}}
	PostgresConnection.waits = []Wait{{Condition: homelabv1.ConditionSecret,
		Reasons: []string{homelabv1.ReasonSecretNotFound, homelabv1.ReasonWaitingForDependency}, Dependency: "Secret"}}
	dependencyReasons := []string{homelabv1.ReasonMissingDependency, homelabv1.ReasonWaitingForDependency}
	PostgresDatabase.waits = []Wait{{Condition: homelabv1.ConditionConnection, Reasons: dependencyReasons, Dependency: "PostgresConnection"}}
	PostgresDatabase.cleanup = &Cleanup{Condition: homelabv1.ConditionCleanup}
	AuthentikServer.waits = []Wait{
		{Condition: homelabv1.ConditionDomain, Reasons: dependencyReasons, Dependency: "Domain"},
		{Condition: homelabv1.ConditionDatabase, Reasons: dependencyReasons, Dependency: "PostgresDatabase"},
		{Condition: homelabv1.ConditionRedis, Reasons: dependencyReasons, Dependency: "RedisConnection"},
	}
	Environment.waits = []Wait{{Condition: catalystv1.ConditionNamespaceReady, Reasons: []string{catalystv1.ReasonProjectNotFound}, Dependency: "Project"}}
}

// KindsOf are the kinds of the named API groups, in AllKinds' order.
func KindsOf(groups ...string) []*Kind {
	var out []*Kind
	for _, k := range AllKinds {
		for _, g := range groups {
			if k.Group == g {
				out = append(out, k)
				break
			}
		}
	}
	return out
}
