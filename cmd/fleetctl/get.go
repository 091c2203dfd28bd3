package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	iotv1alpha1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

// runGet prints iot Deployments and their status: one (--name) with its conditions, last error and
// recent events, or every one of the namespace (-A: of every namespace) as a table; -o yaml or json
// prints the objects as the API server returns them.
func runGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("get", stderr)
	var (
		kube          kubeOptions
		name, output  string
		allNamespaces bool
	)
	kube.bind(fs)
	fs.StringVar(&name, "name", "", "The Deployment's name; every Deployment of the namespace when empty.")
	fs.BoolVar(&allNamespaces, "all-namespaces", false, "List the Deployments of every namespace.")
	fs.BoolVar(&allNamespaces, "A", false, "Same as --all-namespaces.")
	fs.StringVar(&output, "o", "text", "Output: text (a table; with --name, the conditions and events too), yaml or json.")
	fs.StringVar(&output, "output", "text", "Same as -o.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch output {
	case "text", "yaml", "json":
	default:
		return usagef("-o must be text, yaml or json, not %q", output)
	}
	if name != "" {
		if allNamespaces {
			return usagef("--name does not go with --all-namespaces")
		}
		if err := validName(name); err != nil {
			return err
		}
	}
	if kube.namespace != "" {
		if err := validNamespace(kube.namespace); err != nil {
			return err
		}
	}
	ns := ""
	if !allNamespaces {
		var err error
		if ns, err = kube.resolveNamespace(); err != nil {
			return err
		}
	}
	ri, err := kube.deployments(ns)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, kube.timeout)
	defer cancel()
	if name != "" {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("deployment.iot.nationtech.io %s not found in namespace %s", name, ns)
		}
		if err != nil {
			return fmt.Errorf("get %s/%s: %w", ns, name, err)
		}
		if output != "text" {
			return writeStructured(stdout, u.Object, output)
		}
		d, err := typed(u)
		if err != nil {
			return err
		}
		return describe(stdout, d, time.Now())
	}
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list deployments.iot.nationtech.io: %w", err)
	}
	if output != "text" {
		return writeStructured(stdout, list.UnstructuredContent(), output)
	}
	if len(list.Items) == 0 {
		where := "namespace " + ns
		if allNamespaces {
			where = "any namespace"
		}
		_, err := fmt.Fprintf(stdout, "No iot Deployments in %s.\n", where)
		return err
	}
	t := newTable(stdout, statusHeader(allNamespaces)...)
	for i := range list.Items {
		d, err := typed(&list.Items[i])
		if err != nil {
			return err
		}
		t.row(statusRow(d, allNamespaces, time.Now())...)
	}
	return t.flush()
}

func typed(u *unstructured.Unstructured) (*iotv1alpha1.Deployment, error) {
	d := &iotv1alpha1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return d, nil
}

func writeStructured(w io.Writer, obj map[string]any, output string) error {
	var (
		data []byte
		err  error
	)
	if output == "yaml" {
		data, err = yaml.Marshal(obj)
	} else {
		data, err = json.MarshalIndent(obj, "", "  ")
		data = append(data, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func statusHeader(allNamespaces bool) []string {
	h := []string{"NAME", "MATCHED", "SUCCEEDED", "FAILED", "PENDING", "UPDATED", "STALE", "PUBLISHED", "READY", "GENERATION", "AGE"}
	if allNamespaces {
		h = append([]string{"NAMESPACE"}, h...)
	}
	return h
}

// statusRow is one Deployment's row: the aggregate's counts, the Ready condition, and the generation
// the status describes against the object's ("2/3": the operator has not caught up yet).
func statusRow(d *iotv1alpha1.Deployment, allNamespaces bool, now time.Time) []string {
	a := d.Status.Aggregate
	ready := "-"
	if c := meta.FindStatusCondition(d.Status.Conditions, iotv1alpha1.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	gen := strconv.FormatInt(d.Generation, 10)
	if d.Status.ObservedGeneration != d.Generation {
		gen = strconv.FormatInt(d.Status.ObservedGeneration, 10) + "/" + gen
	}
	row := []string{d.Name, itoa(a.MatchedDevices), itoa(a.Succeeded), itoa(a.Failed), itoa(a.Pending), itoa(a.Updated),
		itoa(a.Stale), itoa(d.Status.PublishedDevices), ready, gen, age(d.CreationTimestamp.Time, now)}
	if allNamespaces {
		row = append([]string{d.Namespace}, row...)
	}
	return row
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }

func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}

// describe writes one Deployment: its row, the target and image, then conditions, last error and
// recent events.
func describe(w io.Writer, d *iotv1alpha1.Deployment, now time.Time) error {
	t := newTable(w, statusHeader(false)...)
	t.row(statusRow(d, false, now)...)
	if err := t.flush(); err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(&d.Spec.TargetSelector)
	target := "every device"
	if err != nil {
		target = "invalid selector: " + err.Error()
	} else if !sel.Empty() {
		target = sel.String()
	}
	if _, err := fmt.Fprintf(w, "\nTarget: %s\n", target); err != nil {
		return err
	}
	if p := d.Spec.Score.PodmanV0; p != nil {
		for _, s := range p.Services {
			if _, err := fmt.Fprintf(w, "Service %s: %s\n", s.Name, s.Image); err != nil {
				return err
			}
		}
	}
	if d.Spec.Paused {
		if _, err := fmt.Fprintln(w, "Paused: true"); err != nil {
			return err
		}
	}
	if err := heartbeats(w, d.Status.Aggregate); err != nil {
		return err
	}
	if len(d.Status.Conditions) > 0 {
		if _, err := fmt.Fprintln(w, "\nConditions:"); err != nil {
			return err
		}
		t := newTable(w, "TYPE", "STATUS", "REASON", "SINCE", "MESSAGE")
		for _, c := range d.Status.Conditions {
			t.row(c.Type, string(c.Status), c.Reason, textTime(c.LastTransitionTime.Time), c.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if e := d.Status.Aggregate.LastError; e != nil {
		id := e.DeviceID
		if id == "" {
			id = e.Device // a status written before deviceId
		}
		if _, err := fmt.Fprintf(w, "\nLast error: device %s at %s: %s\n", id, textTime(e.At.Time), cellReplacer.Replace(e.Message)); err != nil {
			return err
		}
	}
	if len(d.Status.RecentEvents) > 0 {
		if _, err := fmt.Fprintln(w, "\nRecent events:"); err != nil {
			return err
		}
		t := newTable(w, "AT", "SEVERITY", "DEVICE", "PHASE", "MESSAGE")
		for _, e := range d.Status.RecentEvents {
			t.row(textTime(e.At.Time), orDash(string(e.Severity)), e.Device, e.Phase, orDash(e.Message))
		}
		return t.flush()
	}
	return nil
}

// heartbeats writes the aggregate's heartbeat times, when the status has them: the oldest while a
// selected device is stale, the newest once every one is (both to the minute).
func heartbeats(w io.Writer, a iotv1alpha1.Aggregate) error {
	if a.OldestHeartbeatAt == nil {
		return nil
	}
	line := fmt.Sprintf("Oldest heartbeat: %s (%d stale)", textTime(a.OldestHeartbeatAt.Time), a.Stale)
	if a.NewestHeartbeatAt != nil {
		line += fmt.Sprintf("; newest: %s (every selected device is stale)", textTime(a.NewestHeartbeatAt.Time))
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
