package localcluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// KubeScheduler is the Component that runs kube-scheduler from the cluster's binary directory, on
// 127.0.0.1 only, as the admin user, without leader election: pods get bound to the cluster's (kwok)
// nodes by the real scheduling rules, volume binding included.
type KubeScheduler struct {
	// ExtraArgs are appended to the command line (--flag=value), after the defaults.
	ExtraArgs []string

	cluster *Cluster
	proc    *Child
	addr    string
}

var _ Component = (*KubeScheduler)(nil)

// Name implements Component.
func (s *KubeScheduler) Name() string { return "kube-scheduler" }

// Start implements Component: it starts the process and waits for its /healthz.
func (s *KubeScheduler) Start(ctx context.Context, c *Cluster) error {
	s.cluster = c
	dir, err := c.componentDir(s.Name())
	if err != nil {
		return err
	}
	ports, err := testutil.FreePorts(1)
	if err != nil {
		return err
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath(),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--leader-elect=false",
	}
	args = append(args, s.ExtraArgs...)
	out, err := c.output(s.Name())
	if err != nil {
		return err
	}
	c.trackAddrs(s.addr)
	if s.proc, err = StartChild(s.Name(), c.BinaryPath("kube-scheduler"), args, os.Environ(), out); err != nil {
		return err
	}
	return s.proc.WaitReady(ctx, c.opts.StartTimeout, HealthCheck("https://"+s.addr+"/healthz"))
}

// Stop implements Component.
func (s *KubeScheduler) Stop() error {
	if s.proc == nil {
		return nil
	}
	return s.proc.Stop(s.cluster.opts.StopTimeout)
}

// Address is the host:port of its HTTPS endpoint (/healthz, /metrics).
func (s *KubeScheduler) Address() string { return s.addr }
