package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// DefaultNodeName is the fake node Kwok makes.
const DefaultNodeName = "kwok-node"

// Kwok is the Component that runs kwok (sigs.k8s.io/kwok, built into the cluster's binary directory by
// `make controlplane-full`) and gives the cluster one fake Node it manages. kwok plays the kubelet: the
// node reports Ready with room for a million pods, and a pod bound to it gets an IP, turns Running and
// Ready at once (no image is pulled, no probe runs, nothing executes), and is removed as soon as it is
// deleted. With KubeControllerManager and KubeScheduler, Deployments become Available.
//
// kwok runs with its built-in stages (node-initialize and heartbeat for nodes; pod-ready, pod-complete
// and pod-delete for pods) and HOME set to its own directory, so a ~/.kwok/kwok.yaml on the machine
// cannot change them.
type Kwok struct {
	// NodeName is the fake node's name. Default: DefaultNodeName.
	NodeName string
	// ExtraArgs are appended to the command line (--flag=value), after the defaults.
	ExtraArgs []string

	cluster *Cluster
	proc    *Child
	addr    string
}

var _ Component = (*Kwok)(nil)

// Name implements Component.
func (k *Kwok) Name() string { return "kwok" }

// Start implements Component: it starts kwok, waits for its /healthz, creates the node and waits until
// kwok reports it Ready and it takes pods.
func (k *Kwok) Start(ctx context.Context, c *Cluster) error {
	k.cluster = c
	if k.NodeName == "" {
		k.NodeName = DefaultNodeName
	}
	dir, err := c.componentDir(k.Name())
	if err != nil {
		return err
	}
	ports, err := testutil.FreePorts(1)
	if err != nil {
		return err
	}
	k.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath(),
		"--manage-all-nodes=true",
		// Its HTTP server (health, and the logs/exec endpoints kwok fakes) stays on loopback.
		"--server-address=" + k.addr,
		// Room for thousands of pod IPs from 10.244.0.1 on; the default /24 holds 254.
		"--cidr=10.244.0.1/16",
		"--node-ip=127.0.0.1",
	}
	args = append(args, k.ExtraArgs...)
	env := []string{"HOME=" + dir}
	for _, e := range os.Environ() {
		// kwok reads KWOK_* variables as defaults for its flags: only the command line counts here.
		if !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "KWOK_") {
			env = append(env, e)
		}
	}
	out, err := c.output(k.Name())
	if err != nil {
		return err
	}
	c.trackAddrs(k.addr)
	if k.proc, err = StartChild(k.Name(), c.BinaryPath("kwok"), args, env, out); err != nil {
		return err
	}
	if err := k.proc.WaitReady(ctx, c.opts.StartTimeout, HealthCheck("http://"+k.addr+"/healthz")); err != nil {
		return err
	}
	if err := k.createNode(ctx); err != nil {
		return err
	}
	return k.proc.WaitReady(ctx, c.opts.StartTimeout, k.nodeReady)
}

func (k *Kwok) createNode(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: k.NodeName,
		Labels: map[string]string{
			corev1.LabelHostname: k.NodeName,
			corev1.LabelOSStable: "linux",
			// kwok reports amd64 in the node's status; the label agrees with it.
			corev1.LabelArchStable: "amd64",
			"type":                 "kwok",
		},
		// The annotation kwok's own examples put on its nodes; --manage-all-nodes does not need it,
		// it tells a person running kubectl get nodes -o yaml what the node is.
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
	}}
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 6},
		func(ctx context.Context) (bool, error) {
			err := k.cluster.Client().Create(ctx, node)
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
	if err != nil {
		return fmt.Errorf("create node %s: %w", k.NodeName, err)
	}
	return nil
}

// nodeReady waits for kwok to report the node Ready, then takes off the node.kubernetes.io/not-ready
// taint kube-apiserver's TaintNodesByCondition admission put on the new node. That is the one thing of
// kube-controller-manager's node-lifecycle-controller a one-node cluster needs; the controller itself is
// not run because it also evicts pods when a heartbeat comes late, which a loaded 2-core machine can
// cause.
func (k *Kwok) nodeReady(ctx context.Context) error {
	var node corev1.Node
	if err := k.cluster.Client().Get(ctx, client.ObjectKey{Name: k.NodeName}, &node); err != nil {
		return err
	}
	ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
	if !ready {
		return fmt.Errorf("node %s is not Ready yet", k.NodeName)
	}
	notReady := func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }
	if !slices.ContainsFunc(node.Spec.Taints, notReady) {
		return nil
	}
	orig := node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, notReady)
	if err := k.cluster.Client().Patch(ctx, &node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("remove taint %s from node %s: %w", corev1.TaintNodeNotReady, k.NodeName, err)
	}
	return fmt.Errorf("taint %s removed from node %s, checking again", corev1.TaintNodeNotReady, k.NodeName)
}

// Stop implements Component. The node stays: it goes with the cluster's etcd.
func (k *Kwok) Stop() error {
	if k.proc == nil {
		return nil
	}
	return k.proc.Stop(k.cluster.opts.StopTimeout)
}

// Address is the host:port of kwok's HTTP server (/healthz).
func (k *Kwok) Address() string { return k.addr }
