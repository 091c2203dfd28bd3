package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Printer writes the demo's output: section headers ("==> ..."), indented lines and tables. Every
// scenario prints through it, so that all sections look alike.
type Printer struct {
	w io.Writer
}

// Step starts a section: an empty line, then "==> " and the formatted header.
func (p Printer) Step(format string, args ...any) {
	fmt.Fprintf(p.w, "\n==> "+format+"\n", args...)
}

// Printf prints one line indented under the current section; the newline is added.
func (p Printer) Printf(format string, args ...any) {
	fmt.Fprintf(p.w, "    "+format+"\n", args...)
}

// Blank prints an empty line, to set a closing remark apart from the table above it.
func (p Printer) Blank() { fmt.Fprintln(p.w) }

// Table prints rows under header in aligned columns, like kubectl get.
func (p Printer) Table(header []string, rows [][]string) {
	w := tabwriter.NewWriter(p.w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "    "+strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, "    "+strings.Join(r, "\t"))
	}
	_ = w.Flush()
}

// Text prints a document (a rendered configuration file) indented under the current section.
func (p Printer) Text(doc string) {
	for line := range strings.Lines(doc) {
		fmt.Fprint(p.w, "    "+line)
	}
	if !strings.HasSuffix(doc, "\n") {
		fmt.Fprintln(p.w)
	}
}

// Conditions prints obj's conditions like kubectl describe: Ready first, as the summary, then the others
// in the order their writer keeps them.
func (p Printer) Conditions(kind string, obj client.Object, conds []metav1.Condition) {
	p.Step("Conditions of %s %s", kind, obj.GetName())
	if len(conds) == 0 {
		p.Printf("(none: the operator has not written a status)")
		return
	}
	conds = slices.Clone(conds)
	slices.SortStableFunc(conds, func(a, b metav1.Condition) int {
		return boolRank(b.Type == readyCondition) - boolRank(a.Type == readyCondition)
	})
	var rows [][]string
	for _, c := range conds {
		rows = append(rows, []string{c.Type, string(c.Status), c.Reason, c.Message})
	}
	p.Table([]string{"TYPE", "STATUS", "REASON", "MESSAGE"}, rows)
}

// Children prints the objects of the given kinds in owner's namespace that owner owns (an owner
// reference to its UID), kind by kind; kinds the cluster does not serve are left out. It reads metadata
// only, so it works for any kind.
func (p Printer) Children(ctx context.Context, c client.Client, owner client.Object, kinds []schema.GroupVersionKind) {
	p.Step("Objects the operator made for %s (owned by it)", owner.GetName())
	var rows [][]string
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(owner.GetNamespace())); err != nil {
			if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
				rows = append(rows, []string{gvk.Kind, "error: " + err.Error()})
			}
			continue
		}
		for _, item := range list.Items {
			if ownedBy(&item, owner) {
				rows = append(rows, []string{gvk.Kind + "/" + item.Name, gvk.GroupVersion().String()})
			}
		}
	}
	if len(rows) == 0 {
		p.Printf("(none yet)")
		return
	}
	p.Table([]string{"OBJECT", "API VERSION"}, rows)
}

func ownedBy(obj, owner client.Object) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() })
}

// Pods prints the pods in owner's namespace that match selector, like kubectl get pods -o wide -l.
func (p Printer) Pods(ctx context.Context, c client.Client, owner client.Object, selector map[string]string) {
	p.Step("Pods of %s (like kubectl get pods -o wide -l %s)", owner.GetName(), labels.SelectorFromSet(selector))
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(owner.GetNamespace()), client.MatchingLabels(selector)); err != nil {
		p.Printf("(could not list pods: %v)", err)
		return
	}
	if len(pods.Items) == 0 {
		p.Printf("(none)")
		return
	}
	var rows [][]string
	for _, pod := range pods.Items {
		ready := 0
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Ready {
				ready++
			}
		}
		rows = append(rows, []string{pod.Name, fmt.Sprintf("%d/%d", ready, len(pod.Spec.Containers)),
			string(pod.Status.Phase), pod.Status.PodIP, pod.Spec.NodeName, Age(pod.CreationTimestamp.Time)})
	}
	p.Table([]string{"NAME", "READY", "STATUS", "IP", "NODE", "AGE"}, rows)
}

// Events prints the last 15 events about obj (matched by UID), oldest first, like kubectl events.
func (p Printer) Events(ctx context.Context, c client.Client, kind string, obj client.Object) {
	p.Step("Recent events for %s %s", kind, obj.GetName())
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{"involvedObject.uid": string(obj.GetUID())}); err != nil {
		p.Printf("(could not list events: %v)", err)
		return
	}
	if len(events.Items) == 0 {
		p.Printf("(none)")
		return
	}
	items := events.Items
	slices.SortFunc(items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	items = items[max(0, len(items)-15):]
	var rows [][]string
	for _, e := range items {
		count := ""
		if e.Count > 1 {
			count = fmt.Sprintf(" (x%d)", e.Count)
		}
		rows = append(rows, []string{Age(eventTime(e)), e.Type, e.Reason, e.Message + count})
	}
	p.Table([]string{"LAST SEEN", "TYPE", "REASON", "MESSAGE"}, rows)
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// Age is how long ago t was, the way kubectl prints an AGE column.
func Age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t))
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// secs prints a duration the way the demo reports how long something took.
func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// syncWriter serializes writes: the operator's output ("-operator-log -") and the signal handler print
// while the demo does.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// prefixWriter prefixes every complete line written to it before passing it on to w.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (l *prefixWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := slices.Index(l.buf, '\n')
		if i < 0 { // no full line yet: keep it for the next write
			return len(p), nil
		}
		fmt.Fprint(l.w, l.prefix+string(l.buf[:i+1]))
		l.buf = l.buf[i+1:]
	}
}

// Close does nothing: the process helper calls it once the operator has exited.
func (l *prefixWriter) Close() error { return nil }
