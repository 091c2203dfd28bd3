package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Workload is one API's part of the bench, written in one file (irc.go is ErgoNetwork's). The harness runs
// every measurement the same way for each workload: the floor, convergence, steady state and restart,
// latency of edits, memory and the flag sweep. A workload says what its objects are, what the least work to
// reach their converged state is, and how a watch tells that they got there.
//
// Every object lives in the bench's namespace and is numbered: i in [0, N).
type Workload interface {
	// Info names the workload and says what the report says about it.
	Info() Info
	// Kinds are prototypes of every kind the bench's client writes for this workload (the workload's own
	// kind, its children as the floor creates them, the prerequisites): they are discovered before any
	// clock starts.
	Kinds() []client.Object
	// ObjectName is the name of object i.
	ObjectName(i int) string
	// Prepare creates what object i needs before it is created (a Secret the user or cert-manager would
	// have made). It runs before the clock starts, in the floor's run as in the operator's.
	Prepare(ctx context.Context, c client.Client, namespace string, i int) error
	// Create creates object i as a user would.
	Create(ctx context.Context, c client.Client, namespace string, i int) error
	// Floor is the least work the API server can do to reach the state the operator reaches: it creates
	// object i, then its children exactly as the operator builds them (plain creates, no reads), then
	// writes its status once, such that the Observer then sees it converged.
	Floor(ctx context.Context, c client.Client, namespace string, i int) error
	// Edit changes object i's spec as a user would, for the latency run. seq tells the edits apart; the
	// Observer's StartEdit got the same seq just before.
	Edit(ctx context.Context, c client.Client, namespace string, i, seq int) error
	// NewObserver returns the state of one watch: the bench starts a watch per run.
	NewObserver() Observer
}

// Info is what the harness and the report need to know of a workload besides its objects.
type Info struct {
	// Name selects the workload: -workloads=irc. Lower case letters, digits and dashes.
	Name string
	// Kind is the kind the bench creates (ErgoNetwork); Resource is its plural as the API server's
	// metrics name it (ergonetworks), so that the bench's own creates can be taken out of its counts.
	Kind, Resource string
	// Noun and Nouns name one object and several in the report: "network", "networks".
	Noun, Nouns string
	// Controllers are the controllers that reconcile the kind, by the name controller-runtime gives their
	// metrics (controller="ergonetwork") and work queues (name="ergonetwork"): the bench counts their
	// reconciles and waits for their queues to drain.
	Controllers []string
	// Children are the kinds of the objects the operator makes for one object; StatusWrites is how many
	// status writes one object needs at the least. Together they are the minimum writes per object.
	Children     []string
	StatusWrites int
	// OperatorEnv and OperatorArgs are what the operator needs to run this workload's controllers
	// (RELATED_IMAGE_ERGO=..., a flag), on top of the bench's own (-operator-args).
	OperatorEnv, OperatorArgs []string
	// MaxObjects, when not 0, is the most objects one run of the workload makes: a larger -sizes,
	// -memory-sizes or -sweep-size is measured at MaxObjects instead (each database of the postgres
	// workload costs its server 7.5 MB of disk).
	MaxObjects int
	// EditInterval, when not 0, is the least time between two edits of one object, for a workload whose
	// edit takes longer to apply than the churn's round of N objects at small N: the churn then sends
	// fewer edits per second than -churn-rate (at most N per EditInterval).
	EditInterval time.Duration
	// CountersDo is the report's paragraph on what the workload's counters (counter) count and how, before
	// the table of them per object to converge.
	CountersDo string

	// Shape is the report's paragraph on what one object is and what exists before the clock starts.
	Shape string
	// EditDoes says what Edit changes, to be followed by " at 10 edits/s for 30s": "`spec.networkName`
	// of one network after another is merge-patched".
	EditDoes string
	// EditWritten names the first stage of an edit the Observer reports (Progress.Written), as a column
	// heading: "config written". EditStages says what that stage and "applied" (Progress.Applied) are.
	EditWritten, EditStages string
}

// MinWrites is the least number of writes one object needs: each child once, and its status.
func (i Info) MinWrites() int { return len(i.Children) + i.StatusWrites }

// Observer turns the events of one watch into what they mean for each of the workload's objects. The
// bench calls it from one goroutine at a time.
type Observer interface {
	// Watches are the kinds to watch: the workload's own kind and its children's.
	Watches() []Watch
	// Observe folds obj, just added or updated, into the state of the object it belongs to (obj itself
	// or its owner), and says where that object is now.
	Observe(obj client.Object) Progress
	// StartEdit notes that object name is about to get edit seq: what Progress.Written and Applied look
	// for from now on.
	StartEdit(name string, seq int)
}

// Watch is one kind an Observer watches.
type Watch struct {
	// Object is a prototype of the kind.
	Object client.Object
	// Selector, when set, is the only objects of the kind watched (the operator's children by their
	// managed-by label, so that nothing else the bench creates is held).
	Selector labels.Selector
	// AllNamespaces watches the kind in every namespace, not only the bench's: for children the operator
	// makes in namespaces of their own (a Catalyst Environment's). Use it with a Selector.
	AllNamespaces bool
}

// Progress is where one workload object is after an event.
type Progress struct {
	// Name is the workload object the event belongs to; empty when the event is none of the workload's.
	Name string
	// Converged is true when every child the object needs exists and its status has observed its
	// current generation.
	Converged bool
	// Written is true when the edit StartEdit announced has reached its first stage (Info.EditWritten),
	// Applied when it has taken effect. Both are read only while an edit is outstanding.
	Written, Applied bool
}

// workloads are the registered workloads, by name.
var workloads = map[string]Workload{}

var workloadName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// register adds a workload; each workload file calls it from init.
func register(w Workload) {
	name := w.Info().Name
	if !workloadName.MatchString(name) {
		panic(fmt.Sprintf("bench: workload name %q: lower case letters, digits and dashes", name))
	}
	if _, dup := workloads[name]; dup {
		panic(fmt.Sprintf("bench: workload %q registered twice", name))
	}
	workloads[name] = w
}

// registered is every registered workload, by name.
func registered() []Workload {
	out := make([]Workload, 0, len(workloads))
	for _, name := range workloadNames(workloads) {
		out = append(out, workloads[name])
	}
	return out
}

func workloadNames(known map[string]Workload) []string {
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// selectWorkloads parses -workloads: "all" (or nothing) is every known workload, by name; otherwise
// names separated by commas, in the order given, each once.
func selectWorkloads(spec string, known map[string]Workload) ([]Workload, error) {
	all := workloadNames(known)
	if s := strings.TrimSpace(spec); s == "" || s == "all" {
		spec = strings.Join(all, ",")
	}
	var out []Workload
	seen := map[string]bool{}
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		w, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("unknown workload %q (known: %s, or all)", name, strings.Join(all, ", "))
		}
		seen[name] = true
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no workload (known: %s, or all)", strings.Join(all, ", "))
	}
	return out, nil
}

// size is n, or Info.MaxObjects when n is larger.
func (i Info) size(n int) int {
	if i.MaxObjects > 0 && n > i.MaxObjects {
		return i.MaxObjects
	}
	return n
}

// sizes are ns, each at most Info.MaxObjects, in their order, each once.
func (i Info) sizes(ns []int) []int {
	var out []int
	for _, n := range ns {
		if n = i.size(n); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// counter is a workload that counts work neither the operator's metrics nor the API server's show (the
// statements its database server ran). The harness reads the counters when it reads the operator's
// metrics around convergence and the restart's resync; the report shows the differences per object.
type counter interface {
	// Counters are the totals so far, by what they count ("SQL statements").
	Counters() (map[string]float64, error)
}

// closer is a workload that holds something for all its runs (a database server): runWorkload closes it
// once the workload is measured.
type closer interface {
	Close() error
}

// measurer is a workload with a measurement of its own besides the harness's (the postgres workload's
// creates at several session budgets): runWorkload runs Measure after the sweep and before memory, and
// the report renders what it returns after the workload's other figures.
type measurer interface {
	// Measure runs the workload's own measurement with r's harness (r.floorRun, r.operatorRun); nil
	// when there is nothing to measure (its flags say none).
	Measure(ctx context.Context, r *workloadRun) (extra, error)
}

// extra is what a measurer measured.
type extra interface {
	// render writes its part of the workload's section of the report: a heading of level 4 and below.
	render(b *bytes.Buffer)
}

// countersOf reads w's counters: nil for a workload without any.
func countersOf(w Workload) (map[string]float64, error) {
	if c, ok := w.(counter); ok {
		return c.Counters()
	}
	return nil, nil
}

// counted is after minus before for each counter, zeros kept (a counter that stayed at 0 is a figure).
func counted(after, before map[string]float64) map[string]float64 {
	if after == nil {
		return nil
	}
	out := make(map[string]float64, len(after))
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// churnRate is rate, or less when EditInterval allows fewer edits per second of n objects.
func (i Info) churnRate(rate float64, n int) float64 {
	if i.EditInterval > 0 {
		return min(rate, float64(n)/i.EditInterval.Seconds())
	}
	return rate
}
