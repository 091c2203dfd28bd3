package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	iotv1alpha1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// DeviceLabel is the label key --target-device selects on: a device is targeted by its ID only if its
// agent registers the label device=<its ID> (fleet-agent install writes it; docs/iot.md).
const DeviceLabel = "device"

// applyOptions are apply's flags: the reference applier's (--namespace --name --target-device --image
// --port, --delete, --print) and the rest of what a one-container Deployment can say.
type applyOptions struct {
	kube                 kubeOptions
	name, service, image string
	targetDevice         string
	selector             string
	allDevices           bool
	ports, env           stringList
	restart              string
	print, del           bool
	output               string
	forceConflicts       bool
	ignoreNotFound       bool
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func (o *applyOptions) bind(fs *flag.FlagSet) {
	o.kube.bind(fs)
	fs.StringVar(&o.name, "name", "", "The Deployment's name (required): a DNS label, at most 63 characters, no dots.")
	fs.StringVar(&o.image, "image", "", "The container image (required for apply). Applying again with another --image upgrades the devices.")
	fs.StringVar(&o.service, "service", "", "The container's service name (a DNS label); the Deployment's name when empty.")
	fs.StringVar(&o.targetDevice, "target-device", "", "Target the device with this ID: selects the label "+DeviceLabel+"=<ID>, which the device's agent must register (fleet-agent install does).")
	fs.StringVar(&o.selector, "selector", "", "Target the devices this label selector selects (kubectl's syntax: site=lyon,tier in (edge,core),!beta). With --target-device, both must hold.")
	fs.StringVar(&o.selector, "to", "", "Same as --selector (the reference's name).")
	fs.StringVar(&o.selector, "l", "", "Same as --selector.")
	fs.BoolVar(&o.allDevices, "all-devices", false, "Target every device of the fleet (an empty selector); refused with --target-device or --selector.")
	fs.Var(&o.ports, "port", "A published port: [HOST:]CONTAINER[/tcp|/udp], e.g. 8080:80; repeat the flag for several.")
	fs.Var(&o.env, "env", "An environment variable NAME=VALUE (sent in clear text to the devices); repeat the flag for several.")
	fs.StringVar(&o.restart, "restart", "", "The container's restart policy: Always, OnFailure or Never; the API's default (Always) when empty.")
	fs.BoolVar(&o.print, "print", false, "Print the Deployment as YAML for `kubectl apply -f -` (or --server-side) instead of applying it; contacts no cluster.")
	fs.BoolVar(&o.del, "delete", false, "Delete the Deployment named by --namespace and --name instead of applying (the reference's --delete; same as fleetctl delete).")
	fs.StringVar(&o.output, "o", "yaml", "With --print: yaml or json.")
	fs.StringVar(&o.output, "output", "yaml", "Same as -o.")
	fs.BoolVar(&o.forceConflicts, "force-conflicts", true, "Take over the fields fleetctl sends when another field manager owns them (server-side apply's force, as the reference applied); false fails on a conflict instead.")
}

func runApply(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("apply", stderr)
	o := &applyOptions{}
	o.bind(fs)
	fs.BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "With --delete: succeed when the Deployment does not exist.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if o.del {
		if o.print {
			return usagef("--delete and --print do not go together")
		}
		return o.delete(ctx, stdout)
	}
	obj, err := o.object()
	if err != nil {
		return err
	}
	if o.print {
		return printObject(stdout, obj, o.output)
	}
	if o.output != "yaml" && o.output != "json" {
		return usagef("-o must be yaml or json, not %q", o.output)
	}
	ns, err := o.kube.resolveNamespace()
	if err != nil {
		return err
	}
	obj.SetNamespace(ns)
	ri, err := o.kube.deployments(ns)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.kube.timeout)
	defer cancel()
	got, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: o.forceConflicts})
	if err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("apply %s/%s: %w (another field manager owns a field fleetctl sends; --force-conflicts takes it over)", ns, obj.GetName(), err)
		}
		return fmt.Errorf("apply %s/%s: %w", ns, obj.GetName(), err)
	}
	_, err = fmt.Fprintf(stdout, "deployment.iot.nationtech.io/%s applied in namespace %s (generation %d)\n", got.GetName(), ns, got.GetGeneration())
	return err
}

func runDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("delete", stderr)
	o := &applyOptions{}
	o.kube.bind(fs)
	fs.StringVar(&o.name, "name", "", "The Deployment's name (required).")
	fs.BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "Succeed when the Deployment does not exist.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return o.delete(ctx, stdout)
}

// delete deletes the named Deployment. The operator's finalizer holds it until the operator withdrew
// the deployment from the devices; delete returns once the API server accepted the deletion.
func (o *applyOptions) delete(ctx context.Context, stdout io.Writer) error {
	if err := validName(o.name); err != nil {
		return err
	}
	if o.kube.namespace != "" {
		if err := validNamespace(o.kube.namespace); err != nil {
			return err
		}
	}
	ns, err := o.kube.resolveNamespace()
	if err != nil {
		return err
	}
	ri, err := o.kube.deployments(ns)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.kube.timeout)
	defer cancel()
	err = ri.Delete(ctx, o.name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err) && o.ignoreNotFound:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("deployment.iot.nationtech.io %s not found in namespace %s", o.name, ns)
	case err != nil:
		return fmt.Errorf("delete %s/%s: %w", ns, o.name, err)
	}
	_, err = fmt.Fprintf(stdout, "deployment.iot.nationtech.io/%s deleted in namespace %s (the operator removes it from the devices before it is gone)\n", o.name, ns)
	return err
}

// parseFlags reads a Kubernetes command's flags; positional arguments are a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// object is the Deployment the flags describe, holding exactly the fields fleetctl has an opinion on
// (what it sends, and so owns, in a server-side apply), or a usage error naming the first bad flag.
// Every check happens here, before any request.
func (o *applyOptions) object() (*unstructured.Unstructured, error) {
	if err := validName(o.name); err != nil {
		return nil, err
	}
	if o.kube.namespace != "" {
		if err := validNamespace(o.kube.namespace); err != nil {
			return nil, err
		}
	}
	if o.image == "" {
		return nil, usagef("--image is required")
	}
	if len(o.image) > 512 || strings.ContainsAny(o.image, " \t\r\n\v\f") {
		return nil, usagef("--image %q must be 1-512 characters without whitespace", o.image)
	}
	service := o.service
	if service == "" {
		service = o.name
	}
	if errs := validation.IsDNS1123Label(service); len(errs) > 0 {
		return nil, usagef("--service %q is not a DNS label: %s", service, strings.Join(errs, "; "))
	}
	selector, err := o.targetSelector()
	if err != nil {
		return nil, err
	}
	svc := map[string]any{"name": service, "image": o.image}
	if len(o.ports) > 32 {
		return nil, usagef("at most 32 --port flags, not %d", len(o.ports))
	}
	if len(o.ports) > 0 {
		ports := make([]any, 0, len(o.ports))
		for _, p := range o.ports {
			port, err := parsePort(p)
			if err != nil {
				return nil, err
			}
			ports = append(ports, port)
		}
		svc["ports"] = ports
	}
	if len(o.env) > 64 {
		return nil, usagef("at most 64 --env flags, not %d", len(o.env))
	}
	if len(o.env) > 0 {
		env := make([]any, 0, len(o.env))
		seen := map[string]bool{}
		for _, e := range o.env {
			name, value, ok := strings.Cut(e, "=")
			if !ok || !envName.MatchString(name) || len(name) > 128 {
				return nil, usagef("--env %q is not NAME=VALUE with NAME a letter or '_' then letters, digits or '_'", e)
			}
			if seen[name] {
				return nil, usagef("--env %s is given twice", name)
			}
			if len(value) > 4096 {
				return nil, usagef("--env %s: the value is over 4096 characters", name)
			}
			seen[name] = true
			v := map[string]any{"name": name}
			if value != "" {
				v["value"] = value
			}
			env = append(env, v)
		}
		svc["env"] = env
	}
	// The restart policy is sent even when it is the schema's default, for the reason parsePort sends
	// the protocol: the services list is atomic, so an apply must match the stored, defaulted object.
	switch iotv1alpha1.RestartPolicy(o.restart) {
	case "":
		svc["restartPolicy"] = string(iotv1alpha1.RestartAlways)
	case iotv1alpha1.RestartAlways, iotv1alpha1.RestartOnFailure, iotv1alpha1.RestartNever:
		svc["restartPolicy"] = o.restart
	default:
		return nil, usagef("--restart must be Always, OnFailure or Never, not %q", o.restart)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"targetSelector": selector,
			"score": map[string]any{
				"type":     string(iotv1alpha1.ScorePodmanV0),
				"podmanV0": map[string]any{"services": []any{svc}},
			},
		},
	}}
	obj.SetGroupVersionKind(deploymentGVK)
	obj.SetName(o.name)
	if o.kube.namespace != "" {
		obj.SetNamespace(o.kube.namespace)
	}
	return obj, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// targetSelector is spec.targetSelector as JSON: from --target-device, --selector or --all-devices.
func (o *applyOptions) targetSelector() (map[string]any, error) {
	if o.allDevices {
		if o.targetDevice != "" || o.selector != "" {
			return nil, usagef("--all-devices does not go with --target-device or --selector")
		}
		return map[string]any{}, nil
	}
	if o.targetDevice == "" && o.selector == "" {
		return nil, usagef("no target: give --target-device ID, --selector (or --to) LABELS, or --all-devices for every device of the fleet")
	}
	sel := &metav1.LabelSelector{}
	if o.selector != "" {
		var err error
		if sel, err = metav1.ParseToLabelSelector(o.selector); err != nil {
			return nil, usagef("--selector %q: %v", o.selector, err)
		}
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			return nil, usagef("--selector %q: %v", o.selector, err)
		}
	}
	if o.targetDevice != "" {
		if err := fleet.ValidDeviceID(o.targetDevice); err != nil {
			return nil, usagef("--target-device: %v", err)
		}
		if errs := validation.IsValidLabelValue(o.targetDevice); len(errs) > 0 {
			return nil, usagef("--target-device %q cannot be a label value (%s): target it with --selector on another label", o.targetDevice, strings.Join(errs, "; "))
		}
		if v, ok := sel.MatchLabels[DeviceLabel]; ok && v != o.targetDevice {
			return nil, usagef("--target-device %s and --selector %s=%s select no device together", o.targetDevice, DeviceLabel, v)
		}
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
		sel.MatchLabels[DeviceLabel] = o.targetDevice
	}
	out := map[string]any{}
	if len(sel.MatchLabels) > 0 {
		ml := map[string]any{}
		for k, v := range sel.MatchLabels {
			ml[k] = v
		}
		out["matchLabels"] = ml
	}
	if len(sel.MatchExpressions) > 0 {
		exprs := make([]any, 0, len(sel.MatchExpressions))
		for _, r := range sel.MatchExpressions {
			e := map[string]any{"key": r.Key, "operator": string(r.Operator)}
			if len(r.Values) > 0 {
				vals := make([]any, 0, len(r.Values))
				for _, v := range r.Values {
					vals = append(vals, v)
				}
				e["values"] = vals
			}
			exprs = append(exprs, e)
		}
		out["matchExpressions"] = exprs
	}
	return out, nil
}

// parsePort reads [HOST:]CONTAINER[/tcp|/udp].
func parsePort(s string) (map[string]any, error) {
	spec, proto, hasProto := strings.Cut(s, "/")
	// The schema defaults the protocol to TCP. The ports sit in an atomic list, so fleetctl sends the
	// default itself: an apply that left it to the API server would differ from the stored object and
	// rewrite it (a new managedFields time) whenever it lands in another second.
	port := map[string]any{"protocol": string(iotv1alpha1.ProtocolTCP)}
	if hasProto {
		switch strings.ToUpper(proto) {
		case "TCP", "UDP":
			port["protocol"] = strings.ToUpper(proto)
		default:
			return nil, usagef("--port %q: the protocol must be tcp or udp, not %q", s, proto)
		}
	}
	host, container, hasHost := strings.Cut(spec, ":")
	if !hasHost {
		container, host = host, ""
	}
	cp, err := portNumber(container)
	if err != nil {
		return nil, usagef("--port %q: the container port %v", s, err)
	}
	port["containerPort"] = int64(cp)
	if hasHost {
		hp, err := portNumber(host)
		if err != nil {
			return nil, usagef("--port %q: the host port %v", s, err)
		}
		port["hostPort"] = int64(hp)
	}
	return port, nil
}

func portNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("%d is out of range 1-65535", n)
	}
	return n, nil
}

// validName checks --name as the API does (a DNS label: the CRD refuses dots and more than 63
// characters, the API server anything that is not a DNS subdomain).
func validName(name string) error {
	if name == "" {
		return usagef("--name is required")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return usagef("--name %q is not a valid Deployment name: %s (no dots: the name is a token of NATS subjects)", name, strings.Join(errs, "; "))
	}
	return nil
}

func validNamespace(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return usagef("--namespace %q is not a valid namespace: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// printObject writes obj for `kubectl apply -f -`.
func printObject(w io.Writer, obj *unstructured.Unstructured, output string) error {
	var (
		data []byte
		err  error
	)
	switch output {
	case "yaml":
		data, err = yaml.Marshal(obj.Object)
	case "json":
		data, err = json.MarshalIndent(obj.Object, "", "  ")
		data = append(data, '\n')
	default:
		return usagef("-o must be yaml or json, not %q", output)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}
