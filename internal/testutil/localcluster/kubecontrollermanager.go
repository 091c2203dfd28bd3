package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// DefaultControllers are the kube-controller-manager controllers a local cluster runs: what a
// namespace's workloads need to behave as in a real cluster (Deployments roll out and become Available,
// owner references cascade, namespaces finish deleting, ServiceAccounts and their CA appear, claims bind
// to volumes and are released), and nothing that needs a cloud, kubelets or more nodes.
var DefaultControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
}

// DefaultStorageClass is the cluster's default StorageClass, made by KubeControllerManager. Its
// provisioner is kube-controller-manager's development-only hostPath provisioner, so a claim binds to a
// volume as it would in a real cluster and pods that mount it can be scheduled.
const DefaultStorageClass = "standard"

// hostPathProvisioner is the in-tree provisioner behind --enable-hostpath-provisioner.
const hostPathProvisioner = "kubernetes.io/host-path"

// hostPathRoot is where that provisioner makes each volume's directory; kube-controller-manager has it
// hard-coded.
const hostPathRoot = "/tmp/hostpath_pv/"

// KubeControllerManager is the Component that runs kube-controller-manager from the cluster's binary
// directory, on 127.0.0.1 only, as the admin user, without leader election. It also makes
// DefaultStorageClass.
type KubeControllerManager struct {
	// Controllers overrides DefaultControllers.
	Controllers []string
	// ExtraArgs are appended to the command line (--flag=value), after the defaults.
	ExtraArgs []string

	cluster *Cluster
	proc    *Child
	addr    string
}

var _ Component = (*KubeControllerManager)(nil)

// Name implements Component.
func (k *KubeControllerManager) Name() string { return "kube-controller-manager" }

// Start implements Component: it starts the process, waits for its /healthz and makes the default
// StorageClass.
func (k *KubeControllerManager) Start(ctx context.Context, c *Cluster) error {
	k.cluster = c
	dir, err := c.componentDir(k.Name())
	if err != nil {
		return err
	}
	// The serving CA goes into every ServiceAccount namespace's kube-root-ca.crt ConfigMap.
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, c.cfg.CAData, 0o600); err != nil {
		return err
	}
	ports, err := testutil.FreePorts(1)
	if err != nil {
		return err
	}
	k.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	controllers := k.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath(),
		"--controllers=" + strings.Join(controllers, ","),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + filepath.Join(c.APIServerCertDir(), "sa-signer.key"),
		"--root-ca-file=" + caFile,
		"--enable-hostpath-provisioner=true",
		// One machine, many objects at once (e2e creates 50 networks): the defaults (20 qps) would
		// make the controllers, not the operator, the slow part.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		"--concurrent-gc-syncs=20",
	}
	args = append(args, k.ExtraArgs...)
	out, err := c.output(k.Name())
	if err != nil {
		return err
	}
	c.trackAddrs(k.addr)
	if k.proc, err = StartChild(k.Name(), c.BinaryPath("kube-controller-manager"), args, os.Environ(), out); err != nil {
		return err
	}
	if err := k.proc.WaitReady(ctx, c.opts.StartTimeout, HealthCheck("https://"+k.addr+"/healthz")); err != nil {
		return err
	}
	return k.ensureStorageClass(ctx)
}

func (k *KubeControllerManager) ensureStorageClass(ctx context.Context) error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultStorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       hostPathProvisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if err := k.cluster.Client().Create(ctx, sc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageClass %s: %w", sc.Name, err)
	}
	return nil
}

// Stop implements Component. After the process is gone it removes the directories the hostPath
// provisioner made for this cluster's volumes: they live outside the cluster's directory.
func (k *KubeControllerManager) Stop() error {
	if k.proc == nil {
		return nil
	}
	err := k.proc.Stop(k.cluster.opts.StopTimeout)
	return errors.Join(err, k.removeVolumeDirs())
}

func (k *KubeControllerManager) removeVolumeDirs() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pvs corev1.PersistentVolumeList
	if err := k.cluster.Client().List(ctx, &pvs); err != nil {
		return fmt.Errorf("list volumes to remove their hostPath directories: %w", err)
	}
	var errs []error
	for _, pv := range pvs.Items {
		hp := pv.Spec.HostPath
		if hp == nil || !strings.HasPrefix(hp.Path, hostPathRoot) || strings.Contains(hp.Path, "..") ||
			pv.Annotations["pv.kubernetes.io/provisioned-by"] != hostPathProvisioner {
			continue
		}
		if err := os.RemoveAll(hp.Path); err != nil {
			errs = append(errs, err)
		}
	}
	// hostPathRoot itself stays: another cluster's kube-controller-manager may be making a volume in it
	// right now, and a provisioning that fails because its parent vanished is retried only after a
	// backoff.
	return errors.Join(errs...)
}

// Address is the host:port of its HTTPS endpoint (/healthz, /metrics).
func (k *KubeControllerManager) Address() string { return k.addr }
