package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWorkloads starts the full cluster (kube-controller-manager, kube-scheduler, kwok) and checks what
// envtest alone cannot do: a Deployment whose pod mounts a claim becomes Available, the garbage collector
// deletes dependents, a deleted namespace goes away, and Stop leaves no process, port or directory.
func TestWorkloads(t *testing.T) {
	logDir := t.TempDir()
	var phases []string
	c := New(WithWorkloads(Options{
		SkipExternalCRDs: true,
		LogDir:           logDir,
		Progress:         func(p string, took time.Duration) { phases = append(phases, p); t.Logf("%-32s %s", p, took) },
	}))
	if err := c.Start(t.Context()); err != nil {
		dumpLogs(t, logDir)
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
		if t.Failed() {
			dumpLogs(t, logDir)
		}
	})
	want := []string{PhaseControlPlane, PhaseCRDs, PhaseKubeconfig,
		"component kube-controller-manager", "component kube-scheduler", "component kwok"}
	if !slices.Equal(phases, want) {
		t.Errorf("phases = %q, want %q", phases, want)
	}
	ctx, cl := t.Context(), c.Client()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "workloads-"}}
	if err := cl.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	t.Run("a Deployment with a claim becomes Available", func(t *testing.T) {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns.Name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("1Gi"),
				}},
			},
		}
		if err := cl.Create(ctx, pvc); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{"app": "probe"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns.Name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "c", Image: "registry.example/never-pulled:1"}},
						Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
							PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
						}}},
					},
				},
			},
		}
		if err := cl.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "Deployment Available", func() error {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
				return err
			}
			for _, cond := range d.Status.Conditions {
				if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue && d.Status.AvailableReplicas == 1 {
					return nil
				}
			}
			var pods corev1.PodList
			_ = cl.List(ctx, &pods, client.InNamespace(ns.Name))
			var events corev1.EventList
			_ = cl.List(ctx, &events, client.InNamespace(ns.Name))
			var msgs []string
			for _, e := range events.Items {
				msgs = append(msgs, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Reason+": "+e.Message)
			}
			var pvcs corev1.PersistentVolumeClaimList
			_ = cl.List(ctx, &pvcs, client.InNamespace(ns.Name))
			var pvs corev1.PersistentVolumeList
			_ = cl.List(ctx, &pvs)
			for _, p := range pvcs.Items {
				msgs = append(msgs, fmt.Sprintf("pvc %s phase=%s volume=%s ann=%v", p.Name, p.Status.Phase, p.Spec.VolumeName, p.Annotations))
			}
			for _, p := range pvs.Items {
				msgs = append(msgs, fmt.Sprintf("pv %s phase=%s claim=%v ann=%v", p.Name, p.Status.Phase, p.Spec.ClaimRef, p.Annotations))
			}
			return fmt.Errorf("status %+v; pods %v; events %q", d.Status, podSummary(pods.Items), msgs)
		})
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			t.Fatal(err)
		}
		if pvc.Status.Phase != corev1.ClaimBound || ptr.Deref(pvc.Spec.StorageClassName, "") != DefaultStorageClass {
			t.Errorf("claim phase %s class %v, want Bound to a volume of %s", pvc.Status.Phase, pvc.Spec.StorageClassName, DefaultStorageClass)
		}
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace(ns.Name)); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 || pods.Items[0].Spec.NodeName != DefaultNodeName || pods.Items[0].Status.Phase != corev1.PodRunning {
			t.Errorf("pods = %v, want one Running on %s", podSummary(pods.Items), DefaultNodeName)
		}
		if sa := pods.Items[0].Spec.ServiceAccountName; sa != "default" {
			t.Errorf("pod's ServiceAccount = %q, want default (ServiceAccount admission)", sa)
		}
	})

	t.Run("the garbage collector deletes dependents", func(t *testing.T) {
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns.Name}}
		if err := cl.Create(ctx, owner); err != nil {
			t.Fatal(err)
		}
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "dependent", Namespace: ns.Name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
		}}
		if err := cl.Create(ctx, dependent); err != nil {
			t.Fatal(err)
		}
		if err := cl.Delete(ctx, owner); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "dependent deleted", func() error {
			err := cl.Get(ctx, client.ObjectKeyFromObject(dependent), dependent)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (get: %v)", err)
		})
	})

	t.Run("a deleted namespace goes away, its volume with it", func(t *testing.T) {
		var pvs corev1.PersistentVolumeList
		if err := cl.List(ctx, &pvs); err != nil {
			t.Fatal(err)
		}
		if len(pvs.Items) != 1 || pvs.Items[0].Spec.HostPath == nil {
			t.Fatalf("volumes = %d, want the probe's one hostPath volume", len(pvs.Items))
		}
		dir := pvs.Items[0].Spec.HostPath.Path
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("the provisioner did not make %s: %v", dir, err)
		}
		if err := cl.Delete(ctx, ns); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 120*time.Second, "namespace deleted", func() error {
			err := cl.Get(ctx, client.ObjectKeyFromObject(ns), ns)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("phase %s (get: %v)", ns.Status.Phase, err)
		})
		waitFor(t, 60*time.Second, "volume released and deleted", func() error {
			if err := cl.List(ctx, &pvs); err != nil {
				return err
			}
			if len(pvs.Items) > 0 {
				return fmt.Errorf("%d volumes left", len(pvs.Items))
			}
			return nil
		})
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after its volume was deleted (stat: %v)", dir, err)
		}
	})

	if err := c.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	stopped = true
	if err := c.CheckStopped(); err != nil {
		t.Errorf("after Stop: %v", err)
	}
	if len(c.Addresses()) != 6 {
		t.Errorf("addresses = %q, want etcd client and peer, kube-apiserver, kube-controller-manager, kube-scheduler, kwok", c.Addresses())
	}
}

// TestParentDeathKillsChildren runs a cluster in a child test process, kills that process with SIGKILL
// and checks that nothing it started survives it.
func TestParentDeathKillsChildren(t *testing.T) {
	if os.Getenv("LOCALCLUSTER_CHILD") == "1" {
		runChildCluster()
		return
	}
	if setpriv() == "" {
		t.Skip("no setpriv with --pdeathsig: etcd and kube-apiserver cannot get a parent-death signal")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := startChildCluster(ctx, t)
	waitFor(t, 60*time.Second, "every process of the killed test's cluster to exit", func() error {
		procs, err := ProcessesMentioning(dir)
		if err != nil {
			return err
		}
		if len(procs) > 0 {
			return fmt.Errorf("still running: %v", procs)
		}
		return nil
	})
	_ = os.RemoveAll(strings.TrimSuffix(dir, "/")) // what Stop would have removed
}

func waitFor(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v (last check: %v)", what, timeout, err, last)
	}
}

func podSummary(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s node=%q phase=%s", p.Name, p.Spec.NodeName, p.Status.Phase))
	}
	return out
}

func dumpLogs(t *testing.T, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, _ := os.ReadFile(dir + "/" + e.Name())
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		t.Logf("--- last lines of %s:\n%s", e.Name(), strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
}

// runChildCluster is the child side of TestParentDeathKillsChildren: it starts a full cluster, says where
// its directory is, and waits to be killed.
func runChildCluster() {
	c := New(Full())
	if err := c.Start(context.Background()); err != nil {
		fmt.Println("START FAILED:", err)
		os.Exit(1)
	}
	fmt.Printf("CLUSTER_DIR=%s/\n", c.Dir())
	select {}
}

// startChildCluster runs this test binary again as runChildCluster, waits for its cluster to be up, kills
// it with SIGKILL and returns the cluster's directory (with a trailing slash).
func startChildCluster(ctx context.Context, t *testing.T) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestParentDeathKillsChildren$", "-test.v=false")
	cmd.Env = append(os.Environ(), "LOCALCLUSTER_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	s := bufio.NewScanner(out)
	for s.Scan() {
		line := s.Text()
		if d, ok := strings.CutPrefix(line, "CLUSTER_DIR="); ok {
			dir = d
			break
		}
		t.Logf("child: %s", line)
	}
	if dir == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the child test process did not start a cluster")
	}
	procs, err := ProcessesMentioning(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) < 5 {
		t.Errorf("the child's cluster runs %d processes, want etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok: %v", len(procs), procs)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return dir
}
