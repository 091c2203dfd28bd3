// Command demo is `make demo`: it starts the local cluster (internal/localcluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok), runs the operator as its real binary against it,
// applies the samples from config/samples, follows the sample network to Ready=True (playing cert-manager,
// which does not run here), shows what the operator made of it, and keeps everything running until Ctrl-C
// so you can look around with kubectl.
//
//	go run ./hack/demo [-operator bin/platform-operator] [-operator-log FILE|-] [-exit-after 20s] [-skip-operator]
//
// docs/demo.md describes what it prints and how to look around.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/ergo"
	"github.com/platform-operator/platform-operator/internal/localcluster"
)

const (
	namespace    = "default"
	fieldManager = "platform-operator-demo"
	// envExitAfter is -exit-after for runs without flags (CI has no terminal to press Ctrl-C in).
	envExitAfter = "DEMO_EXIT_AFTER"
)

type options struct {
	root         string
	operator     string
	operatorLog  string
	skipOperator bool
	exitAfter    time.Duration
	wait         time.Duration
}

func main() {
	root, err := localcluster.FindRepoRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err, "(run it from inside the repository)")
		os.Exit(2)
	}
	o := options{root: root}
	flag.StringVar(&o.operator, "operator", filepath.Join(root, "bin", "platform-operator"),
		"operator binary to run; built with `go build` when missing (make demo builds it first)")
	flag.StringVar(&o.operatorLog, "operator-log", filepath.Join(root, "bin", "demo", "operator.log"),
		`file the operator's output goes to; "-" prints it here, each line prefixed with "operator |"`)
	flag.BoolVar(&o.skipOperator, "skip-operator", false, "do not run the operator: only the cluster and the samples")
	flag.DurationVar(&o.exitAfter, "exit-after", 0,
		"stop by itself this long after the demo is up instead of waiting for Ctrl-C (env "+envExitAfter+")")
	flag.DurationVar(&o.wait, "wait", 60*time.Second, "how long to wait for the operator to reconcile the sample")
	flag.Parse()
	if o.exitAfter == 0 {
		if v := os.Getenv(envExitAfter); v != "" {
			if o.exitAfter, err = time.ParseDuration(v); err != nil {
				fmt.Fprintf(os.Stderr, "demo: %s=%q: %v\n", envExitAfter, v, err)
				os.Exit(2)
			}
		}
	}
	os.Exit(run(o))
}

// run returns the exit code: 0 when everything came up and shut down cleanly, leaving nothing running.
func run(o options) (code int) {
	// The first SIGINT/SIGTERM starts a clean shutdown; later ones are only acknowledged, because
	// dying half way would leave etcd and kube-apiserver running in their own process groups.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		first := true
		for s := range signals {
			if first {
				first = false
				fmt.Printf("\n%s received: stopping.\n", s)
				cancel(fmt.Errorf("%s", s))
				continue
			}
			fmt.Printf("%s received again: still stopping, please wait (at most about a minute).\n", s)
		}
	}()

	failed := false
	fail := func(format string, args ...any) {
		failed = true
		fmt.Printf("    ERROR: "+format+"\n", args...)
	}

	clusterLogs := filepath.Join(o.root, "bin", "demo", "cluster")
	step("Starting the local cluster (Kubernetes %s from %s): etcd, kube-apiserver, kube-controller-manager, "+
		"kube-scheduler and kwok with one fake node", localcluster.KubernetesVersion, rel(o.root, assetsDir(o.root)))
	fmt.Printf("    their logs go to %s/\n", rel(o.root, clusterLogs))
	start := time.Now()
	_ = os.RemoveAll(clusterLogs)
	cluster := localcluster.New(localcluster.WithWorkloads(localcluster.Options{
		RepoRoot: o.root,
		LogDir:   clusterLogs,
		Progress: func(phase string, took time.Duration) { fmt.Printf("    %-34s %6s\n", phase, secs(took)) },
	}))
	defer func() {
		t := time.Now()
		if err := cluster.Stop(); err != nil {
			fail("stopping the cluster: %v", err)
		} else if cluster.Dir() != "" {
			fmt.Printf("    cluster stopped in %s, %s removed\n", secs(time.Since(t)), cluster.Dir())
		}
		if err := cluster.CheckStopped(); err != nil {
			fail("left behind: %v", err)
		} else if cluster.Dir() != "" {
			fmt.Printf("    nothing left behind: no process of the cluster or the operator runs, none of its %d ports is open\n",
				len(cluster.Addresses()))
		}
		if failed {
			fmt.Println("demo: finished with errors (see ERROR above)")
			code = 1
		}
	}()
	if err := cluster.Start(ctx); err != nil {
		fail("%v", err)
		return 1
	}
	fmt.Printf("    %-34s %6s   (API server %s)\n", "ready", secs(time.Since(start)), cluster.APIServerURL())
	c := cluster.Client()

	var op *operator
	if o.skipOperator {
		step("Not starting the operator (-skip-operator): nothing will reconcile the samples")
	} else {
		var err error
		if op, err = startOperator(ctx, o, cluster.KubeconfigPath()); err != nil {
			fail("%v", err)
			if op != nil {
				_ = op.stop()
				op.showTail(20)
			}
			return 1
		}
		// A no-op once the demo stopped it itself; this one covers the early returns.
		defer func() { _ = op.stop() }()
	}

	step("Applying the samples (server-side apply as %q)", fieldManager)
	network, err := applySamples(ctx, c, o.root)
	if err != nil {
		fail("%v", err)
		return 1
	}

	if op != nil {
		step("Waiting for the operator to reconcile ErgoNetwork %s/%s (up to %s)", namespace, network, o.wait)
		if err := waitReconciled(ctx, c, network, o.wait, op); err != nil {
			fail("%v", err)
			op.showTail(20)
		} else if err := becomeReady(ctx, c, network, o.wait, op); err != nil {
			fail("%v", err)
			op.showTail(20)
		}
	}

	var en ircv1.ErgoNetwork
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: network}, &en); err != nil {
		fail("read ErgoNetwork %s: %v", network, err)
		return 1
	}
	showNetwork(&en)
	showChildren(ctx, c, &en)
	showPods(ctx, c, &en)
	showConfig(ctx, c, &en)
	showEvents(ctx, c, &en)
	explainReady(&en, op != nil)

	step("The demo cluster is running")
	fmt.Printf("    export KUBECONFIG=%s\n", cluster.KubeconfigPath())
	if kubectl := cluster.BinaryPath("kubectl"); isFile(kubectl) {
		fmt.Printf("    %s get ergonetworks,deployments,pods,services,configmaps,pvc,certificates,routes -o wide\n", rel(o.root, kubectl))
		fmt.Printf("    %s get nodes,pv\n", rel(o.root, kubectl))
		fmt.Printf("    %s describe ergonetwork %s\n", rel(o.root, kubectl), network)
	} else {
		fmt.Printf("    kubectl get ergonetworks   (any kubectl works; `make controlplane-full` builds one into %s)\n",
			rel(o.root, assetsDir(o.root)))
	}
	if op != nil && op.logPath != "" {
		fmt.Printf("    operator log: %s\n", op.logPath)
	}

	var exited <-chan struct{}
	if op != nil {
		exited = op.Done()
	}
	var timeout <-chan time.Time
	if o.exitAfter > 0 {
		fmt.Printf("    stopping by itself in %s (-exit-after); Ctrl-C stops it sooner\n", o.exitAfter)
		timeout = time.After(o.exitAfter)
	} else {
		fmt.Printf("    press Ctrl-C to stop the operator and the cluster (or: kill -TERM %d)\n", os.Getpid())
	}
	select {
	case <-ctx.Done():
	case <-timeout:
		fmt.Printf("\n%s passed (-exit-after): stopping.\n", o.exitAfter)
	case <-exited:
		fail("the operator exited on its own: %v", op.err())
		op.showTail(20)
	}

	step("Stopping")
	if op != nil {
		t := time.Now()
		if err := op.stop(); err != nil {
			fail("stopping the operator: %v", err)
		} else {
			fmt.Printf("    operator stopped in %s\n", secs(time.Since(t)))
		}
	}
	// The deferred cluster.Stop runs next and turns any failure into exit status 1.
	return 0
}

// operator is the operator process.
type operator struct {
	*localcluster.Child
	logPath string
}

func startOperator(ctx context.Context, o options, kubeconfig string) (*operator, error) {
	bin := o.operator
	if !isFile(bin) {
		if bin != filepath.Join(o.root, "bin", "platform-operator") {
			return nil, fmt.Errorf("operator binary %s does not exist", bin)
		}
		step("Building the operator: go build -o %s . (make build does the same)", rel(o.root, bin))
		t := time.Now()
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		build.Dir, build.Stdout, build.Stderr = o.root, os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build the operator (try make build): %w", err)
		}
		fmt.Printf("    built in %s\n", secs(time.Since(t)))
	}

	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	probeAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--health-probe-bind-address=" + probeAddr,
		"--metrics-bind-address=0",
	}
	supported := flagsOf(bin)
	if supported["zap-encoder"] {
		args = append(args, "--zap-encoder=console") // a log meant for people, not for a log pipeline
	}
	if supported != nil {
		// Drop flags this build of the operator does not have rather than failing on them;
		// KUBECONFIG below covers a missing --kubeconfig.
		args = slices.DeleteFunc(args, func(a string) bool {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			return !supported[name]
		})
	}

	step("Starting the operator: %s %s", rel(o.root, bin), strings.Join(args, " "))
	op := &operator{}
	var out io.WriteCloser
	if o.operatorLog == "-" {
		out = prefixWriter("    operator | ")
	} else {
		if err := os.MkdirAll(filepath.Dir(o.operatorLog), 0o755); err != nil {
			return nil, err
		}
		f, err := os.Create(o.operatorLog)
		if err != nil {
			return nil, err
		}
		op.logPath, out = o.operatorLog, f
		fmt.Printf("    its log goes to %s (-operator-log - prints it here)\n", rel(o.root, o.operatorLog))
	}
	t := time.Now()
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig)
	// Its own process group, so Ctrl-C reaches only the demo, which stops the operator before the
	// cluster; a parent-death SIGKILL takes it down should the demo die without stopping it.
	if op.Child, err = localcluster.StartChild("the operator", bin, args, env, out); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}

	// Ready when /readyz answers: the manager has started its caches and controllers.
	url := "http://" + probeAddr + "/readyz"
	for {
		select {
		case <-op.Done():
			return op, fmt.Errorf("the operator exited during start-up: %v", op.err())
		case <-ctx.Done():
			return op, context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Printf("    ready (pid %d, %s answered) after %s\n", op.PID(), url, secs(time.Since(t)))
				return op, nil
			}
		}
		if time.Since(t) > 60*time.Second {
			return op, fmt.Errorf("the operator did not become ready at %s within 60s", url)
		}
	}
}

// stop sends SIGTERM, waits up to 15 s for a clean exit, then kills. Idempotent.
func (op *operator) stop() error { return op.Stop(15 * time.Second) }

// err is how the operator exited, once it has; nil while it runs.
func (op *operator) err() error {
	select {
	case <-op.Done():
		if err := op.Err(); err != nil {
			return err
		}
		return errors.New("exit status 0")
	default:
		return nil
	}
}

// showTail prints the end of the operator's log file, for when something went wrong.
func (op *operator) showTail(n int) {
	if op.logPath == "" {
		return
	}
	data, err := os.ReadFile(op.logPath)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	fmt.Printf("    last lines of %s:\n", op.logPath)
	for _, l := range lines {
		fmt.Println("    operator | " + l)
	}
}

var flagName = regexp.MustCompile(`(?m)^\s+-{1,2}([a-zA-Z0-9][-a-zA-Z0-9.]*)`)

// flagsOf asks a binary for its flags (`-h`); nil when it would not say.
func flagsOf(bin string) map[string]bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput()
	m := map[string]bool{}
	for _, sub := range flagName.FindAllSubmatch(out, -1) {
		m[string(sub[1])] = true
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// applySamples applies the extras (Secret, ClusterIssuer) and then the samples the kustomization lists,
// and returns the name of the ErgoNetwork among them.
func applySamples(ctx context.Context, c client.Client, root string) (string, error) {
	samples := filepath.Join(root, "config", "samples")
	files, err := filepath.Glob(filepath.Join(samples, "extras", "*.yaml"))
	if err != nil {
		return "", err
	}
	listed, err := kustomizationResources(filepath.Join(samples, "kustomization.yaml"))
	if err != nil {
		return "", err
	}
	files = append(files, listed...)

	network := ""
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return "", err
		}
		for _, u := range objs {
			namespaced, err := c.IsObjectNamespaced(u)
			if err != nil {
				return "", fmt.Errorf("%s %s in %s: %w", u.GetKind(), u.GetName(), rel(root, f), err)
			}
			if namespaced && u.GetNamespace() == "" {
				u.SetNamespace(namespace)
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
				client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
				return "", fmt.Errorf("apply %s %s from %s: %w", u.GetKind(), u.GetName(), rel(root, f), err)
			}
			fmt.Printf("    %-38s applied   (%s)\n", u.GetKind()+" "+objectName(u), rel(root, f))
			if u.GroupVersionKind() == ircv1.GroupVersion.WithKind("ErgoNetwork") && network == "" {
				network = u.GetName()
			}
		}
	}
	if network == "" {
		return "", fmt.Errorf("no ErgoNetwork among the samples in %s", rel(root, samples))
	}
	return network, nil
}

func kustomizationResources(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var files []string
	for _, r := range k.Resources {
		files = append(files, filepath.Join(filepath.Dir(path), r))
	}
	return files, nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(f), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// waitReconciled waits until status.observedGeneration reaches metadata.generation.
func waitReconciled(ctx context.Context, c client.Client, name string, timeout time.Duration, op *operator) error {
	t := time.Now()
	var en ircv1.ErgoNetwork
	for {
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &en); err != nil {
			return err
		}
		if en.Status.ObservedGeneration >= en.Generation {
			fmt.Printf("    status.observedGeneration %d = metadata.generation after %s\n",
				en.Status.ObservedGeneration, secs(time.Since(t)))
			return nil
		}
		if time.Since(t) > timeout {
			return fmt.Errorf("status.observedGeneration is %d after %s, generation is %d: the operator has not "+
				"reconciled the network", en.Status.ObservedGeneration, timeout, en.Generation)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-op.Done():
			return fmt.Errorf("the operator exited: %v", op.err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func showNetwork(en *ircv1.ErgoNetwork) {
	step("ErgoNetworks (like kubectl get ergonetworks -n %s)", namespace)
	ready := ""
	if cond := meta.FindStatusCondition(en.Status.Conditions, ircv1.ConditionReady); cond != nil {
		ready = string(cond.Status)
	}
	table([]string{"NAME", "HOSTNAME", "NETWORK", "READY", "AGE"}, [][]string{{
		en.Name, en.Spec.Hostname, en.Status.NetworkName, ready, age(en.CreationTimestamp.Time),
	}})

	step("Conditions of ErgoNetwork %s", en.Name)
	if len(en.Status.Conditions) == 0 {
		fmt.Println("    (none: the operator has not written a status)")
		return
	}
	// Ready first, as the summary; the others in the order the operator wrote them.
	conds := slices.Clone(en.Status.Conditions)
	slices.SortStableFunc(conds, func(a, b metav1.Condition) int {
		return boolRank(b.Type == ircv1.ConditionReady) - boolRank(a.Type == ircv1.ConditionReady)
	})
	var rows [][]string
	for _, cond := range conds {
		rows = append(rows, []string{cond.Type, string(cond.Status), cond.Reason, cond.Message})
	}
	table([]string{"TYPE", "STATUS", "REASON", "MESSAGE"}, rows)
}

// showChildren lists the objects the network owns, kind by kind; kinds the cluster does not serve are
// skipped.
func showChildren(ctx context.Context, c client.Client, en *ircv1.ErgoNetwork) {
	step("Objects the operator made for %s (owned by it)", en.Name)
	lists := []client.ObjectList{
		&corev1.ConfigMapList{}, &corev1.PersistentVolumeClaimList{}, &corev1.SecretList{},
		&cmv1.CertificateList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{}, &routev1.RouteList{},
	}
	var rows [][]string
	for _, list := range lists {
		if err := c.List(ctx, list, client.InNamespace(en.Namespace)); err != nil {
			if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
				rows = append(rows, []string{fmt.Sprintf("%T", list), "error: " + err.Error()})
			}
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			continue
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok || !ownedBy(obj, en) {
				continue
			}
			gvk, err := c.GroupVersionKindFor(obj)
			if err != nil {
				continue
			}
			rows = append(rows, []string{gvk.Kind + "/" + obj.GetName(), gvk.GroupVersion().String()})
		}
	}
	if len(rows) == 0 {
		fmt.Println("    (none yet)")
		return
	}
	table([]string{"OBJECT", "API VERSION"}, rows)
}

func ownedBy(obj client.Object, owner client.Object) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() })
}

func showConfig(ctx context.Context, c client.Client, en *ircv1.ErgoNetwork) {
	name := en.Name + "-config"
	step("ircd.yaml in ConfigMap %s", name)
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: en.Namespace, Name: name}, &cm); err != nil {
		fmt.Printf("    (not there: %v)\n", err)
		return
	}
	cfg, ok := cm.Data["ircd.yaml"]
	if !ok {
		fmt.Println("    (the ConfigMap has no ircd.yaml key)")
		return
	}
	for line := range strings.Lines(cfg) {
		fmt.Print("    " + line)
	}
	if !strings.HasSuffix(cfg, "\n") {
		fmt.Println()
	}
}

func showEvents(ctx context.Context, c client.Client, en *ircv1.ErgoNetwork) {
	step("Recent events for ErgoNetwork %s", en.Name)
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(en.Namespace),
		client.MatchingFields{"involvedObject.uid": string(en.UID)}); err != nil {
		fmt.Printf("    (could not list events: %v)\n", err)
		return
	}
	if len(events.Items) == 0 {
		fmt.Println("    (none)")
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
		rows = append(rows, []string{age(eventTime(e)), e.Type, e.Reason, e.Message + count})
	}
	table([]string{"LAST SEEN", "TYPE", "REASON", "MESSAGE"}, rows)
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

// explainReady says what to look at when the network did not become Ready.
func explainReady(en *ircv1.ErgoNetwork, operatorRan bool) {
	cond := meta.FindStatusCondition(en.Status.Conditions, ircv1.ConditionReady)
	switch {
	case !operatorRan:
		fmt.Println("\n    No operator ran (-skip-operator), so the network has no status and no children.")
		return
	case cond != nil && cond.Status == metav1.ConditionTrue:
		fmt.Printf("\n    Ready is True: ergo's pod runs on the fake node %s and every part the spec asks for is in place.\n",
			localcluster.DefaultNodeName)
		return
	case cond == nil:
		fmt.Println("\n    The network has no Ready condition: the operator has not written a status (see its log).")
		return
	}
	fmt.Printf("\n    Ready is %s (%s): %s\n", cond.Status, cond.Reason, cond.Message)
	fmt.Println("    The operator's log and the cluster's logs in bin/demo/ say more.")
}

// becomeReady follows the network to Ready=True: the Deployment becomes Available because
// kube-controller-manager, kube-scheduler and kwok run its pod; the Certificate becomes Ready because the
// demo plays cert-manager, which does not run here.
func becomeReady(ctx context.Context, c client.Client, name string, timeout time.Duration, op *operator) error {
	step("Waiting for the ergo Deployment to become Available (the deployment controller, the scheduler and " +
		"kwok's fake node run its pod)")
	t := time.Now()
	if err := waitCondition(ctx, c, name, ircv1.ConditionDeployment, timeout, op); err != nil {
		return err
	}
	fmt.Printf("    %s=True after %s\n", ircv1.ConditionDeployment, secs(time.Since(t)))

	var en ircv1.ErgoNetwork
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &en); err != nil {
		return err
	}
	if en.Spec.TLS != nil {
		cert := ergo.CertificateName(&en)
		step("Playing cert-manager: no cert-manager runs in this local cluster, so the demo itself marks "+
			"Certificate %s Ready", cert)
		fmt.Printf("    (on a real cluster, cert-manager issues the certificate into Secret %s and sets this condition)\n",
			ergo.TLSSecretName(&en))
		if err := markCertificateReady(ctx, c, cert); err != nil {
			return err
		}
		fmt.Printf("    Certificate %s: Ready=True (set by the demo)\n", cert)
	}

	step("Waiting for ErgoNetwork %s to become Ready", name)
	t = time.Now()
	if err := waitCondition(ctx, c, name, ircv1.ConditionReady, timeout, op); err != nil {
		return err
	}
	fmt.Printf("    %s=True after %s\n", ircv1.ConditionReady, secs(time.Since(t)))
	return nil
}

// markCertificateReady sets the Ready condition cert-manager sets once it has issued a certificate.
func markCertificateReady(ctx context.Context, c client.Client, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cert cmv1.Certificate
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &cert); err != nil {
			return err
		}
		now := metav1.Now()
		cert.Status.Conditions = []cmv1.CertificateCondition{{
			Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionTrue, Reason: "Ready",
			Message:            "Marked Ready by make demo, standing in for cert-manager",
			LastTransitionTime: &now, ObservedGeneration: cert.Generation,
		}}
		return c.Status().Update(ctx, &cert)
	})
}

// waitCondition waits until the network's condition is True for its current generation.
func waitCondition(ctx context.Context, c client.Client, name, condType string, timeout time.Duration, op *operator) error {
	t := time.Now()
	var en ircv1.ErgoNetwork
	for {
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &en); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(en.Status.Conditions, condType)
		if cond != nil && cond.Status == metav1.ConditionTrue && en.Status.ObservedGeneration == en.Generation {
			return nil
		}
		if time.Since(t) > timeout {
			if cond == nil {
				return fmt.Errorf("ErgoNetwork %s has no %s condition after %s", name, condType, timeout)
			}
			return fmt.Errorf("ErgoNetwork %s: %s is %s after %s (%s: %s)", name, condType, cond.Status, timeout,
				cond.Reason, cond.Message)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-op.Done():
			return fmt.Errorf("the operator exited: %v", op.err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// showPods lists the network's pods like kubectl get pods -o wide.
func showPods(ctx context.Context, c client.Client, en *ircv1.ErgoNetwork) {
	step("Pods of %s (like kubectl get pods -o wide -l app.kubernetes.io/instance=%s)", en.Name, en.Name)
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(en.Namespace),
		client.MatchingLabels{"app.kubernetes.io/instance": en.Name}); err != nil {
		fmt.Printf("    (could not list pods: %v)\n", err)
		return
	}
	if len(pods.Items) == 0 {
		fmt.Println("    (none)")
		return
	}
	var rows [][]string
	for _, p := range pods.Items {
		ready := 0
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready++
			}
		}
		rows = append(rows, []string{p.Name, fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)),
			string(p.Status.Phase), p.Status.PodIP, p.Spec.NodeName, age(p.CreationTimestamp.Time)})
	}
	table([]string{"NAME", "READY", "STATUS", "IP", "NODE", "AGE"}, rows)
}

func step(format string, args ...any) {
	fmt.Printf("\n==> "+format+"\n", args...)
}

func table(header []string, rows [][]string) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "    "+strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, "    "+strings.Join(r, "\t"))
	}
	_ = w.Flush()
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

func age(t time.Time) string {
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

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func assetsDir(root string) string {
	if v := os.Getenv(localcluster.AssetsEnv); v != "" {
		return v
	}
	return localcluster.DefaultAssetsDirectory(root)
}

// rel shortens paths inside the repository for printing.
func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// prefixWriter prefixes every line written to it; safe for the two streams of one process.
func prefixWriter(prefix string) io.WriteCloser {
	return &linePrefixer{prefix: prefix}
}

type linePrefixer struct {
	mu     sync.Mutex
	prefix string
	buf    bytes.Buffer
}

func (l *linePrefixer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadBytes('\n')
		if err != nil { // no full line yet: keep it for the next write
			l.buf.Reset()
			l.buf.Write(line)
			return len(p), nil
		}
		fmt.Print(l.prefix + string(line))
	}
}

// Close does nothing: StartChild calls it once the operator has exited.
func (l *linePrefixer) Close() error { return nil }
