//go:build linux

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// The metrics endpoint as the Deployment serves it (--metrics-secure, the default): HTTPS, every request
// authenticated with TokenReview and authorized with SubjectAccessReview against the API server
// (controller-runtime's filters.WithAuthenticationAndAuthorization). The operator runs with the suite's
// admin kubeconfig, so it may create both reviews; the OLM suite runs it with the bundle's RBAC.
var _ = Describe("metrics", func() {
	It("metrics: /metrics refuses no token (401), a forged token (500), a token without the metrics-reader role (403), and serves a token bound to it", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		op := startMetricsOperator(ctx, "metrics-auth", operatorConfig{namespace: ns, secureMetrics: true})
		url := "https://" + op.MetricsAddr + "/metrics"

		By("no token: 401")
		r := get(ctx, http1Client, url, "")
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.code).To(Equal(http.StatusUnauthorized), r.body)
		Expect(r.body).NotTo(ContainSubstring("controller_runtime_"))

		By("a token the API server did not issue: refused, with 500 (controller-runtime's mapping, see below)")
		r = get(ctx, http1Client, url, "not-a-token")
		Expect(r.err).NotTo(HaveOccurred())
		// TokenReview answers "not authenticated"; the bearer-token authenticator turns that into an error
		// ("invalid bearer token"), and controller-runtime v0.22's filter answers every authenticator
		// error with 500 "Authentication failed" (and logs it with a stack trace) rather than 401. Still a
		// refusal; pinned here so that a change of it is noticed. 401 is what it should be.
		Expect(r.code).To(Equal(http.StatusInternalServerError), r.body)
		Expect(r.body).To(ContainSubstring("Authentication failed"))
		Expect(r.body).NotTo(ContainSubstring("controller_runtime_"))

		By("a ServiceAccount's token without the metrics-reader role: authenticated, then 403")
		stranger := serviceAccountToken(ctx, ns, "stranger")
		Expect(allowedToGetMetrics(ctx, ns, "stranger")).To(BeFalse(), "the API server lets a bare ServiceAccount get /metrics")
		r = get(ctx, http1Client, url, stranger)
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.code).To(Equal(http.StatusForbidden), r.body)
		// The refusal names the user TokenReview found: the token was authenticated, the role is what is missing.
		Expect(r.body).To(ContainSubstring("system:serviceaccount:" + ns + ":stranger"))
		Expect(r.body).NotTo(ContainSubstring("controller_runtime_"))

		By("a ServiceAccount's token bound to config/rbac's metrics-reader ClusterRole: 200 with controller-runtime's metrics")
		reader := metricsReaderToken(ctx, ns, "scraper")
		r = get(ctx, http1Client, url, reader)
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.code).To(Equal(http.StatusOK), r.body)
		expectOperatorMetrics(r.body)
	})

	It("metrics HTTP/2: a client offering only h2 is refused in the TLS handshake by default and served over HTTP/2 with --enable-http2", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		token := metricsReaderToken(ctx, ns, "scraper")
		def := startMetricsOperator(ctx, "metrics-default", operatorConfig{namespace: ns, secureMetrics: true})
		h2 := startMetricsOperator(ctx, "metrics-http2", operatorConfig{namespace: ns, secureMetrics: true, args: []string{"--enable-http2"}})

		By("default: offering only h2, the TLS handshake fails with the server's no_application_protocol alert")
		_, err := negotiate(ctx, def.MetricsAddr, "h2")
		Expect(err).To(MatchError(ContainSubstring("tls: no application protocol")))

		By("default: an HTTP/2-only client gets no request served; the same token over HTTP/1.1 is served")
		r := get(ctx, http2Client, "https://"+def.MetricsAddr+"/metrics", token)
		Expect(r.err).To(MatchError(ContainSubstring("tls: no application protocol")), "status %d over HTTP/%d", r.code, r.protoMajor)
		Expect(r.code).To(BeZero())
		r = get(ctx, http1Client, "https://"+def.MetricsAddr+"/metrics", token)
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.code).To(Equal(http.StatusOK), r.body)
		Expect(r.protoMajor).To(Equal(1))

		By("default: a client offering h2 and http/1.1 (as browsers and Prometheus do) falls back to http/1.1")
		proto, err := negotiate(ctx, def.MetricsAddr, "h2", "http/1.1")
		Expect(err).NotTo(HaveOccurred())
		Expect(proto).To(Equal("http/1.1"))

		By("--enable-http2: h2 is negotiated and the HTTP/2-only client is served over HTTP/2")
		proto, err = negotiate(ctx, h2.MetricsAddr, "h2")
		Expect(err).NotTo(HaveOccurred())
		Expect(proto).To(Equal("h2"))
		r = get(ctx, http2Client, "https://"+h2.MetricsAddr+"/metrics", token)
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.code).To(Equal(http.StatusOK), r.body)
		Expect(r.protoMajor).To(Equal(2))
		expectOperatorMetrics(r.body)
	})

	It("metrics pprof: off by default (no pprof port, /debug/pprof/ not on the probe or metrics port), served with --pprof-bind-address", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		token := metricsReaderToken(ctx, ns, "scraper")
		def := startMetricsOperator(ctx, "pprof-default", operatorConfig{namespace: ns, secureMetrics: true})
		Expect(def.PprofAddr).To(BeEmpty())
		Expect(def.Args).NotTo(ContainElement(HavePrefix("--pprof-bind-address")))

		By("default: the process listens on the probe, metrics and webhook ports and nothing else, and goes on doing so")
		Expect(def.WebhookAddr).NotTo(BeEmpty())
		Expect(listeningAddrs(def.PID())).To(ConsistOf(def.ProbeAddr, def.MetricsAddr, def.WebhookAddr))
		Consistently(ctx, func() []string { return listeningAddrs(def.PID()) }).Should(ConsistOf(def.ProbeAddr, def.MetricsAddr, def.WebhookAddr))

		By("default: /debug/pprof/ is on neither the probe port nor the metrics port")
		for _, u := range []string{
			"http://" + def.ProbeAddr + "/debug/pprof/",
			"http://" + def.ProbeAddr + "/debug/pprof/goroutine?debug=1",
			"https://" + def.MetricsAddr + "/debug/pprof/",
			"https://" + def.MetricsAddr + "/debug/pprof/goroutine?debug=1",
		} {
			r := get(ctx, http1Client, u, token)
			Expect(r.err).NotTo(HaveOccurred(), u)
			Expect(r.code).To(Equal(http.StatusNotFound), "%s: %s", u, r.body)
		}

		By("control: with OperatorOptions.Pprof (--pprof-bind-address) one more port serves /debug/pprof/")
		pp := startMetricsOperator(ctx, "pprof-on", operatorConfig{namespace: ns, secureMetrics: true, pprof: true})
		Expect(pp.PprofAddr).NotTo(BeEmpty())
		Expect(listeningAddrs(pp.PID())).To(ConsistOf(pp.ProbeAddr, pp.MetricsAddr, pp.WebhookAddr, pp.PprofAddr))
		r := get(ctx, http1Client, "http://"+pp.PprofAddr+"/debug/pprof/", "")
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.code).To(Equal(http.StatusOK), r.body)
		Expect(r.body).To(ContainSubstring("goroutine"))
		// It is on its own port only: the probe port still does not serve it.
		r = get(ctx, http1Client, "http://"+pp.ProbeAddr+"/debug/pprof/", "")
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.code).To(Equal(http.StatusNotFound), r.body)
	})
})

// startMetricsOperator is startOperator, with a check that the metrics port already serves TLS:
// StartOperator waits until the metrics port accepts connections (the manager's /readyz passes before its
// metrics server has made its self-signed certificate and started listening), and pprof's.
func startMetricsOperator(ctx context.Context, name string, cfg operatorConfig) *operator {
	GinkgoHelper()
	op := startOperator(name, cfg)
	_, err := negotiate(ctx, op.MetricsAddr)
	Expect(err).NotTo(HaveOccurred(), "the metrics endpoint of operator %s does not serve TLS once StartOperator returned", name)
	return op
}

// loopbackTLS is the clients' TLS configuration. The metrics server's certificate is self-signed
// (controller-runtime makes one when none is mounted), so verification is skipped: acceptable only
// because every request goes to 127.0.0.1, to a process this test started.
func loopbackTLS(protos ...string) *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, NextProtos: protos, MinVersion: tls.VersionTLS12}
}

func transport(protocols func(*http.Protocols)) *http.Transport {
	p := new(http.Protocols)
	protocols(p)
	// Proxy nil: never through a proxy the environment may name.
	return &http.Transport{Proxy: nil, TLSClientConfig: loopbackTLS(), Protocols: p, DisableKeepAlives: true}
}

var (
	// http1Client speaks HTTP/1.1 only (plain or over TLS).
	http1Client = &http.Client{Timeout: 10 * time.Second, Transport: transport(func(p *http.Protocols) { p.SetHTTP1(true) })}
	// http2Client speaks HTTP/2 over TLS only: it offers only "h2" and fails rather than fall back.
	http2Client = &http.Client{Timeout: 10 * time.Second, Transport: transport(func(p *http.Protocols) { p.SetHTTP2(true) })}
)

type response struct {
	code, protoMajor int
	body             string
	err              error
}

// get sends GET url, with the bearer token when there is one.
func get(ctx context.Context, c *http.Client, url, token string) response {
	GinkgoHelper()
	Expect(url).To(Or(HavePrefix("http://127.0.0.1:"), HavePrefix("https://127.0.0.1:")), "this test talks to loopback only")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return response{code: resp.StatusCode, protoMajor: resp.ProtoMajor, body: string(body), err: err}
}

// negotiate makes a TLS handshake with addr offering protos in ALPN and returns the protocol agreed on.
func negotiate(ctx context.Context, addr string, protos ...string) (string, error) {
	GinkgoHelper()
	Expect(addr).To(HavePrefix("127.0.0.1:"), "this test talks to loopback only")
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: loopbackTLS(protos...)}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().NegotiatedProtocol, nil
}

// expectOperatorMetrics asserts that a scrape holds controller-runtime's metrics for the ErgoNetwork
// controller (registered, at zero, as soon as the controller starts).
func expectOperatorMetrics(body string) {
	GinkgoHelper()
	m, err := localcluster.ParseMetrics(strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	Expect(m).To(HaveKey("controller_runtime_reconcile_total"))
	Expect(m.SumBy("controller_runtime_reconcile_total", "controller", nil)).To(HaveKey("ergonetwork"))
}

func clientset() *kubernetes.Clientset {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(cluster.Config())
	Expect(err).NotTo(HaveOccurred())
	return cs
}

// serviceAccountToken creates a ServiceAccount and returns a token for it from the TokenRequest API.
func serviceAccountToken(ctx context.Context, ns, name string) string {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	tr, err := clientset().CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(tr.Status.Token).NotTo(BeEmpty())
	return tr.Status.Token
}

// metricsReaderToken returns a token of a new ServiceAccount bound to the metrics-reader ClusterRole of
// config/rbac, created under a name of this namespace's (it is cluster-scoped) and removed after the spec.
// It returns once the API server's authorizer allows the ServiceAccount to get /metrics, so that the
// operator's first SubjectAccessReview is not a denial it would then cache for 30 s.
func metricsReaderToken(ctx context.Context, ns, sa string) string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "rbac", "metrics_reader_role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.UnmarshalStrict(data, role)).To(Succeed())
	Expect(role.Kind).To(Equal("ClusterRole"))
	Expect(role.Name).To(Equal("metrics-reader"))
	role.Name = "e2e-metrics-reader-" + ns
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}
	for _, obj := range []client.Object{role, binding} {
		Expect(k8s.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func() {
			ctx, cancel := suiteContext()
			defer cancel()
			if err := k8s.Delete(ctx, obj); !apierrors.IsNotFound(err) {
				Expect(err).NotTo(HaveOccurred())
			}
		})
	}
	token := serviceAccountToken(ctx, ns, sa)
	Eventually(ctx, func() bool { return allowedToGetMetrics(ctx, ns, sa) }).Should(BeTrue(),
		"the API server never allowed %s/%s to get /metrics through the metrics-reader role", ns, sa)
	return token
}

// allowedToGetMetrics asks the API server the question the operator's metrics filter asks.
func allowedToGetMetrics(ctx context.Context, ns, sa string) bool {
	GinkgoHelper()
	sar, err := clientset().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":" + sa,
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return sar.Status.Allowed
}

// listeningAddrs are the TCP addresses (host:port) process pid listens on: its socket inodes
// (/proc/<pid>/fd) matched against the LISTEN entries of /proc/<pid>/net/tcp and tcp6.
func listeningAddrs(pid int) []string {
	GinkgoHelper()
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	Expect(err).NotTo(HaveOccurred())
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(proc, "net", table))
		Expect(err).NotTo(HaveOccurred())
		s := bufio.NewScanner(f)
		s.Scan() // header
		for s.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
			fields := strings.Fields(s.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			addrs = append(addrs, procNetAddr(fields[1]))
		}
		Expect(s.Err()).NotTo(HaveOccurred())
		Expect(f.Close()).To(Succeed())
	}
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

// procNetAddr decodes a /proc/net/tcp{,6} address: the IP as 32-bit words in host (little-endian)
// order, then the port, all in hex.
func procNetAddr(s string) string {
	GinkgoHelper()
	hexIP, hexPort, ok := strings.Cut(s, ":")
	Expect(ok).To(BeTrue(), s)
	port, err := strconv.ParseUint(hexPort, 16, 16)
	Expect(err).NotTo(HaveOccurred())
	ip := make(net.IP, len(hexIP)/2)
	for i := 0; i < len(ip); i += 4 {
		word, err := strconv.ParseUint(hexIP[2*i:2*i+8], 16, 32)
		Expect(err).NotTo(HaveOccurred())
		ip[i], ip[i+1], ip[i+2], ip[i+3] = byte(word), byte(word>>8), byte(word>>16), byte(word>>24)
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(port))
}
