package localcluster

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// The control-plane tests need etcd and kube-apiserver in $KUBEBUILDER_ASSETS or bin/k8s/<version>;
// they fail (not skip) without them, with Start's hint on how to build them.

func TestClusterServesCRDsAndStopsCleanly(t *testing.T) {
	var phases []string
	c := New(Options{Progress: func(p string, _ time.Duration) { phases = append(phases, p) }})
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })

	if want := []string{PhaseControlPlane, PhaseCRDs, PhaseKubeconfig}; !slices.Equal(phases, want) {
		t.Errorf("phases = %q, want %q", phases, want)
	}

	t.Run("CRDs are served", func(t *testing.T) {
		dc := discovery.NewDiscoveryClientForConfigOrDie(c.Config())
		for gv, resources := range map[string][]string{
			ircv1.GroupVersion.String(): {"ergonetworks", "ergonetworks/status"},
			"cert-manager.io/v1":        {"certificates", "issuers", "clusterissuers"},
			"route.openshift.io/v1":     {"routes", "routes/status"},
		} {
			list, err := dc.ServerResourcesForGroupVersion(gv)
			if err != nil {
				t.Errorf("discovery of %s: %v", gv, err)
				continue
			}
			for _, r := range resources {
				if !slices.ContainsFunc(list.APIResources, func(ar metav1.APIResource) bool { return ar.Name == r }) {
					t.Errorf("%s does not serve %s", gv, r)
				}
			}
		}
	})

	t.Run("client has the external kinds in its scheme", func(t *testing.T) {
		issuer := &cmv1.ClusterIssuer{
			ObjectMeta: metav1.ObjectMeta{Name: "selfsigned"},
			Spec: cmv1.IssuerSpec{IssuerConfig: cmv1.IssuerConfig{
				SelfSigned: &cmv1.SelfSignedIssuer{},
			}},
		}
		if err := c.Client().Create(t.Context(), issuer); err != nil {
			t.Fatalf("create ClusterIssuer: %v", err)
		}
		var networks ircv1.ErgoNetworkList
		if err := c.Client().List(t.Context(), &networks); err != nil {
			t.Errorf("list ErgoNetworks: %v", err)
		}
	})

	t.Run("kubeconfig reaches the API server as admin", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("self subject review: %v", err)
		}
		if u := review.Status.UserInfo; u.Username != "admin" || !slices.Contains(u.Groups, "system:masters") {
			t.Errorf("kubeconfig user = %q in %q, want admin in system:masters", u.Username, u.Groups)
		}
	})

	t.Run("Services get IPs from the widened range", func(t *testing.T) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
		if err := c.Client().Create(t.Context(), svc); err != nil {
			t.Fatal(err)
		}
		_, want, _ := net.ParseCIDR(DefaultServiceClusterIPRange)
		if ip := net.ParseIP(svc.Spec.ClusterIP); !want.Contains(ip) {
			t.Errorf("ClusterIP %s is outside %s", svc.Spec.ClusterIP, want)
		}
	})

	children := controlPlaneChildren(t)
	t.Run("only loopback listeners", func(t *testing.T) {
		for _, u := range []string{c.APIServerURL().Hostname(), c.EtcdURL().Hostname()} {
			if u != "127.0.0.1" {
				t.Errorf("control plane URL host %s, want 127.0.0.1", u)
			}
		}
		for _, p := range children {
			for _, arg := range p.args {
				if flag, value, ok := strings.Cut(arg, "="); ok && slices.Contains([]string{
					"--bind-address", "--advertise-address", "--listen-client-urls", "--listen-peer-urls",
				}, flag) && !strings.Contains(value, "127.0.0.1") {
					t.Errorf("%s %s", p.name, arg)
				}
			}
		}
	})
	if got := names(children); !slices.Equal(got, []string{"etcd", "kube-apiserver"}) {
		t.Fatalf("control-plane child processes = %q, want etcd and kube-apiserver", got)
	}

	addrs := []string{c.APIServerURL().Host, c.EtcdURL().Host}
	dir, kubeconfig := c.Dir(), c.KubeconfigPath()

	// Two concurrent Stops, as when a signal handler and a deferred Stop race: both wait for one
	// teardown and both report its result.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Stop() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	}
	if err := c.Stop(); err != nil {
		t.Errorf("third Stop: %v", err)
	}

	for _, p := range children {
		if alive(p.pid) {
			t.Errorf("%s (pid %d) still running after Stop", p.name, p.pid)
		}
	}
	if left := controlPlaneChildren(t); len(left) > 0 {
		t.Errorf("child processes left after Stop: %q", names(left))
	}
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after Stop", a)
		}
	}
	for _, p := range []string{dir, kubeconfig} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Stop (stat: %v)", p, err)
		}
	}
	if err := c.Start(t.Context()); !errors.Is(err, ErrStopped) {
		t.Errorf("Start after Stop = %v, want ErrStopped", err)
	}
}

// startWithoutExternalCRDs starts a cluster without the external CRDs, stopped when t ends.
func startWithoutExternalCRDs(t *testing.T) *Cluster {
	t.Helper()
	c := New(Options{SkipExternalCRDs: true})
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

// createNamespaces creates the namespaces named.
func createNamespaces(t *testing.T, k8s client.Client, names ...string) {
	t.Helper()
	for _, ns := range names {
		if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClusterWithoutExternalCRDs(t *testing.T) {
	c := startWithoutExternalCRDs(t)

	dc := discovery.NewDiscoveryClientForConfigOrDie(c.Config())
	if _, err := dc.ServerResourcesForGroupVersion(ircv1.GroupVersion.String()); err != nil {
		t.Errorf("the project's CRDs must still be served: %v", err)
	}
	for _, gv := range []string{"cert-manager.io/v1", "route.openshift.io/v1"} {
		if _, err := dc.ServerResourcesForGroupVersion(gv); !apierrors.IsNotFound(err) {
			t.Errorf("discovery of %s = %v, want NotFound", gv, err)
		}
	}
}

func TestStopDuringStart(t *testing.T) {
	var c *Cluster
	c = New(Options{SkipExternalCRDs: true, Progress: func(phase string, _ time.Duration) {
		if phase == PhaseControlPlane {
			// What a signal handler does while Start is still busy: Stop waits for Start to give
			// up, which it does before the next phase.
			go func() { _ = c.Stop() }()
			<-c.stopCh
		}
	}})
	err := c.Start(t.Context())
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Start = %v, want ErrStopped", err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if left := controlPlaneChildren(t); len(left) > 0 {
		t.Errorf("child processes left after Stop during Start: %q", names(left))
	}
	if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists (stat: %v)", c.Dir(), err)
	}
}

func TestStopWithoutStart(t *testing.T) {
	c := New(Options{})
	if err := c.Stop(); err != nil {
		t.Errorf("Stop of an unstarted cluster: %v", err)
	}
	if err := c.Start(t.Context()); !errors.Is(err, ErrStopped) {
		t.Errorf("Start after Stop = %v, want ErrStopped", err)
	}
}

func TestResolveAssets(t *testing.T) {
	withBinaries := func(t *testing.T) string {
		dir := t.TempDir()
		for _, name := range []string{"etcd", "kube-apiserver"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	option, env, root := withBinaries(t), withBinaries(t), t.TempDir()
	defaultDir := DefaultAssetsDirectory(root)
	if err := os.MkdirAll(defaultDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(defaultDir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()

	tests := []struct {
		name, option, env string
		want              string
		wantErr           bool
	}{
		{name: "option wins over env", option: option, env: env, want: option},
		{name: "env when no option", env: env, want: env},
		{name: "repository default", want: defaultDir},
		{name: "missing binaries", option: empty, want: empty, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveAssets(tt.option, tt.env, root)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("dir = %s, want %s", got, tt.want)
			}
			if tt.wantErr && !strings.Contains(err.Error(), AssetsEnv) {
				t.Errorf("error %q does not say how to fix it", err)
			}
		})
	}
}

type process struct {
	pid  int
	name string
	args []string
}

// controlPlaneChildren lists this test process's children named etcd or kube-apiserver.
func controlPlaneChildren(t *testing.T) []process {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to look for child processes in: %v", err)
	}
	var out []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		name := s[open+1 : closing]
		if name != "etcd" && name != "kube-apiserver" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, process{pid: pid, name: name, args: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")})
	}
	return out
}

func names(ps []process) []string {
	var n []string
	for _, p := range ps {
		n = append(n, p.name)
	}
	slices.Sort(n)
	return n
}

// alive tells whether pid is still our child (a reused pid would belong to someone else).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid())
}
