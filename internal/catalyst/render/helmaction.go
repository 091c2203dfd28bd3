package render

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// A Helm install or upgrade renders the chart again, in Helm's own template engine, with what the
// render's child could not know (lookup answers from the cluster, .Release.IsUpgrade): a chart can
// loop or allocate only there. So the whole Helm action (read the release, install or upgrade, the
// rollback of a failed upgrade) runs in a child process too, bounded like a render (Limits: memory,
// the render's timeout on the template rendering, output) and killed at Helm's own timeout. The
// request, credentials included, goes on the child's standard input only.

// HelmRequest is one Helm action: install or upgrade release Release of Chart in Namespace, acting as
// Config.
type HelmRequest struct {
	// Chart is the chart's files as loaded (chart.Chart.Raw: its charts/ included); the child loads
	// the chart from them.
	Chart []*chart.File
	// Input makes the values (HelmValues) and the labels the post-renderer sets.
	Input Input
	// Release and Namespace are the release's name and namespace.
	Release, Namespace string
	// Config is who Helm acts as (the tenant, impersonated by the operator).
	Config Credentials
	// Host and ClusterIssuers are the Policy the guard inside Helm's client enforces; its Scope is the
	// cluster's, discovered by the child.
	Host           string
	ClusterIssuers []string
	// MaxHistory bounds the release's history on upgrade.
	MaxHistory int
	// ReleaseBytes and ReleasesBytes bound the release records the child decodes (BoundedReleases).
	ReleaseBytes, ReleasesBytes int64
	// HelmTimeout is Helm's timeout (hooks); the child ends itself a minute after it whatever happens.
	HelmTimeout time.Duration
	// RenderTimeout bounds the rendering of the chart's templates within the action (Limits.Timeout).
	RenderTimeout time.Duration
}

// Credentials are a rest.Config as data: the API server, its CA, the operator's client certificate or
// bearer token, and the identity it impersonates.
type Credentials struct {
	Host, APIPath, ServerName, UserAgent string
	Insecure                             bool
	CAData, CertData, KeyData            []byte
	BearerToken                          string
	Impersonate                          rest.ImpersonationConfig
	QPS                                  float32
	Burst                                int
}

// CredentialsOf is cfg as data; an error for what cannot leave the process (an exec or auth provider,
// a custom transport or dialer).
func CredentialsOf(cfg *rest.Config) (Credentials, error) {
	c := rest.CopyConfig(cfg)
	if c.ExecProvider != nil || c.AuthProvider != nil || c.WrapTransport != nil || c.Transport != nil || c.Dial != nil {
		return Credentials{}, errors.New("helm: the operator's rest config uses an exec or auth provider or a custom transport, which the Helm process cannot use")
	}
	if err := rest.LoadTLSFiles(c); err != nil {
		return Credentials{}, fmt.Errorf("helm: %w", err)
	}
	token := c.BearerToken
	if c.BearerTokenFile != "" {
		b, err := os.ReadFile(c.BearerTokenFile)
		if err != nil {
			return Credentials{}, fmt.Errorf("helm: %w", err)
		}
		token = string(bytes.TrimSpace(b))
	}
	return Credentials{Host: c.Host, APIPath: c.APIPath, ServerName: c.ServerName, UserAgent: c.UserAgent,
		Insecure: c.Insecure, CAData: c.CAData, CertData: c.CertData, KeyData: c.KeyData, BearerToken: token,
		Impersonate: c.Impersonate, QPS: c.QPS, Burst: c.Burst}, nil
}

func (c Credentials) config() *rest.Config {
	return &rest.Config{Host: c.Host, APIPath: c.APIPath, UserAgent: c.UserAgent, BearerToken: c.BearerToken,
		Impersonate: c.Impersonate, QPS: c.QPS, Burst: c.Burst,
		TLSClientConfig: rest.TLSClientConfig{Insecure: c.Insecure, ServerName: c.ServerName, CAData: c.CAData, CertData: c.CertData, KeyData: c.KeyData}}
}

// HelmOutcome is what kind of end a Helm action had.
type HelmOutcome string

// The Helm actions' outcomes.
const (
	// HelmDeployed: the release was installed or upgraded (HelmResult.Revision).
	HelmDeployed HelmOutcome = "Deployed"
	// HelmFailed: Helm failed (HelmResult.Error; Refused when the guard refused objects).
	HelmFailed HelmOutcome = "Failed"
	// HelmUnreadable: a release record is beyond the read limits (ErrReleaseTooLarge).
	HelmUnreadable HelmOutcome = "Unreadable"
	// HelmReadFailed: the release could not be read (a transient error: try again).
	HelmReadFailed HelmOutcome = "ReadFailed"
)

// HelmResult is a Helm action's result, as the child reports it.
type HelmResult struct {
	Outcome HelmOutcome
	// Error is Helm's error (Failed, Unreadable, ReadFailed).
	Error string `json:",omitempty"`
	// Upgrade says the action was an upgrade (a failed one was rolled back).
	Upgrade bool `json:",omitempty"`
	// Revision is the deployed revision, or the one deployed after a failed upgrade.
	Revision int `json:",omitempty"`
	// Rollback says how a failed upgrade's rollback went: the end of the condition's message.
	Rollback string `json:",omitempty"`
	// RolledBack says a rollback was made.
	RolledBack bool `json:",omitempty"`
	// Refused are the guard's refusals (at most 32).
	Refused []string `json:",omitempty"`
	// Impersonation says the API server refused the tenant (instruments.RefusalImpersonation).
	Impersonation bool `json:",omitempty"`
	// Recovered names the revision a killed action left pending, which was marked failed first.
	Recovered int `json:",omitempty"`
}

// maxHelmResult bounds what the parent reads of a Helm action's result.
const maxHelmResult = 1 << 20

// maxHelmRequest bounds a Helm action's request, which the operator holds while the child starts; the
// chart's files (base64 in it) may take three quarters of it. A chart is templates and values: one of
// 24 MiB is not a chart.
const maxHelmRequest = 32 << 20

// HelmAction runs req in a child process bounded by limits (memory, and limits.Timeout on the
// rendering of the templates), killed at req.HelmTimeout plus a minute. ctx's end kills it too.
func HelmAction(ctx context.Context, limits Limits, req HelmRequest) (*HelmResult, error) {
	limits = limits.withDefaults()
	req.RenderTimeout = limits.Timeout
	var files int
	for _, f := range req.Chart {
		files += len(f.Name) + len(f.Data)
	}
	if files > maxHelmRequest*3/4 {
		return nil, fmt.Errorf("%w: the chart's files exceed %s", ErrTooLarge, byteSize(maxHelmRequest*3/4))
	}
	body, err := json.Marshal(childRequest{Helm: &req, MemoryBytes: limits.MemoryBytes})
	if err != nil {
		return nil, err
	}
	if len(body) > maxHelmRequest {
		return nil, fmt.Errorf("%w: the Helm action's request exceeds %s", ErrTooLarge, byteSize(maxHelmRequest))
	}
	total := req.HelmTimeout + time.Minute
	out, err := runChild(ctx, limits, total, body, maxHelmResult, childMessages{
		timeout:     "the Helm action took longer than %s; it was stopped",
		outOfMemory: "the Helm action needed more than %s of memory; it was stopped",
		tooLarge:    "the Helm action's result exceeds %s",
	})
	if err != nil {
		return nil, err
	}
	res := &HelmResult{}
	if err := json.Unmarshal(out, res); err != nil {
		return nil, fmt.Errorf("helm process: %w", err)
	}
	return res, nil
}

// exitRenderTimeout is the child's exit code when the chart's rendering overran RenderTimeout.
const exitRenderTimeout = 4

// renderTimedOut is what the child says on its error output when its rendering overran.
const renderTimedOut = "render child: rendering the chart timed out"

// helmChild runs req (in the child) and returns its result.
func helmChild(req *HelmRequest) *HelmResult {
	// Whatever happens (a parent that died without killing it), the child ends.
	time.AfterFunc(req.HelmTimeout+2*time.Minute, func() {
		fmt.Fprintln(os.Stderr, "render child: the Helm action did not end")
		os.Exit(2)
	})
	res, err := helmAct(req, &renderPhase{timeout: req.RenderTimeout})
	if err != nil {
		return &HelmResult{Outcome: HelmReadFailed, Error: err.Error()}
	}
	return res
}

// renderPhase bounds the rendering of the chart's templates within a Helm action: from the start of
// the install or upgrade to the post-renderer's run (the templates are rendered by then; a rollback
// renders nothing). Overrun, the child ends itself.
type renderPhase struct {
	timeout time.Duration
	timer   *time.Timer
}

func (p *renderPhase) start() {
	p.timer = time.AfterFunc(p.timeout, func() {
		fmt.Fprintf(os.Stderr, "%s after %s\n", renderTimedOut, p.timeout)
		os.Exit(exitRenderTimeout)
	})
}

func (p *renderPhase) stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// helmAct is the Helm action, as the operator ran it in its own process before: read the release,
// mark a pending revision a killed action left failed, install (anew when the only revision failed)
// or upgrade, and roll a failed upgrade back, the templates' rendering bounded by phase.
func helmAct(req *HelmRequest, phase *renderPhase) (*HelmResult, error) {
	cfg, err := helmConfig(req)
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadFiles(bufferedFiles(req.Chart))
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", req.Input.Path, err)
	}
	name := req.Release
	last, err := action.NewGet(cfg).Run(name)
	if errors.Is(err, ErrReleaseTooLarge) {
		return &HelmResult{Outcome: HelmUnreadable, Error: err.Error()}, nil
	}
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return &HelmResult{Outcome: HelmReadFailed, Error: fmt.Sprintf("read Helm release %s: %v", name, err)}, nil
	}
	res := &HelmResult{}
	if last != nil && last.Info.Status.IsPending() {
		// Only the operator acts on its releases, one action per Environment at a time, and this
		// one's process is the only one running: a pending revision is one whose process was killed
		// (a timeout, memory, a restart). Helm would refuse every action after it ("another operation
		// is in progress"); marked failed, as Helm marks a revision whose action failed, it is
		// installed over or upgraded from.
		last.Info.Status = release.StatusFailed
		last.Info.Description = "the operator's Helm action did not end (it was stopped)"
		if err := cfg.Releases.Update(last); err != nil {
			return nil, fmt.Errorf("mark Helm release %s revision %d failed: %w", name, last.Version, err)
		}
		res.Recovered = last.Version
	}
	values := HelmValues(req.Input)
	post := signalled{PostRenderer: Labeller{Labels: req.Input.Labels}, rendered: phase.stop}
	fresh := last == nil || (last.Version == 1 && last.Info.Status != release.StatusDeployed)
	var rel *release.Release
	ctx := context.Background()
	phase.start()
	if fresh {
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace, install.PostRenderer = name, req.Namespace, post
		install.Replace, install.Timeout = last != nil, req.HelmTimeout
		rel, err = install.RunWithContext(ctx, ch, values)
	} else {
		upgrade := action.NewUpgrade(cfg)
		upgrade.Namespace, upgrade.PostRenderer, upgrade.MaxHistory = req.Namespace, post, req.MaxHistory
		upgrade.Timeout = req.HelmTimeout
		rel, err = upgrade.RunWithContext(ctx, name, ch, values)
	}
	phase.stop()
	if err != nil {
		res.Outcome, res.Error, res.Upgrade = HelmFailed, err.Error(), !fresh
		if !fresh {
			res.rollback(cfg, name, req.MaxHistory)
		}
		if refused := Refusals(cfg.KubeClient); len(refused) > 0 {
			res.Refused = refused[:min(len(refused), 32)]
		} else if instruments.RefusalCheck(err, false) == instruments.RefusalImpersonation {
			res.Impersonation = true
		}
		return res, nil
	}
	res.Outcome, res.Revision, res.Upgrade = HelmDeployed, rel.Version, !fresh
	return res, nil
}

// rollback rolls a release whose upgrade failed back to its last revision, and says how it went. An
// upgrade refused before Helm recorded a revision (the guard or the API server refused what it was about
// to send) left the last revision deployed: there is nothing to roll back.
func (res *HelmResult) rollback(cfg *action.Configuration, name string, maxHistory int) {
	last, err := action.NewGet(cfg).Run(name)
	if err == nil && last.Info.Status == release.StatusDeployed {
		res.Revision = last.Version
		res.Rollback = fmt.Sprintf("; revision %d stays deployed", last.Version)
		return
	}
	rollback := action.NewRollback(cfg)
	rollback.MaxHistory = maxHistory
	res.Rollback = "; rolled back to the last revision"
	if rerr := rollback.Run(name); rerr != nil {
		res.Rollback = fmt.Sprintf("; the rollback failed too: %v", rerr)
	} else {
		res.RolledBack = true
	}
	if h, herr := action.NewGet(cfg).Run(name); herr == nil {
		res.Revision = h.Version
	}
}

// signalled is a post-renderer that says when it runs: the templates are rendered by then.
type signalled struct {
	PostRenderer interface {
		Run(*bytes.Buffer) (*bytes.Buffer, error)
	}
	rendered func()
}

func (s signalled) Run(b *bytes.Buffer) (*bytes.Buffer, error) {
	s.rendered()
	return s.PostRenderer.Run(b)
}

func bufferedFiles(files []*chart.File) []*loader.BufferedFile {
	out := make([]*loader.BufferedFile, 0, len(files))
	for _, f := range files {
		out = append(out, &loader.BufferedFile{Name: f.Name, Data: f.Data})
	}
	return out
}

// helmConfig is a Helm action configuration for one namespace that acts as req.Config (the
// namespace's tenant): Helm works in that namespace and keeps its release records there (storage
// driver Secrets), and everything it sends or reads (the release's objects, hooks, lookup, the records)
// is authorized by the API server as the tenant, on any revision, install or upgrade alike; and
// everything it sends is checked against policy first.
func helmConfig(req *HelmRequest) (*action.Configuration, error) {
	cfg := req.Config.config()
	ns := req.Namespace
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	getter := &restGetter{cfg: cfg, ns: ns, mapper: mapper, dc: cached}
	helm := &action.Configuration{}
	if err := helm.Init(getter, ns, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	scope := func(gvk schema.GroupVersionKind) (bool, error) {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return false, err
		}
		return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
	}
	// The guard runs on exactly what Helm sends, hooks and upgrades included (GuardKubeClient).
	helm.KubeClient = GuardKubeClient(helm.KubeClient, Policy{Namespace: ns, Host: req.Host, Scope: scope, ClusterIssuers: req.ClusterIssuers})
	// Release records are Secrets of the namespace, which the tenant can write: each is decoded only
	// after its decompressed size is checked (BoundedReleases).
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	d := driver.NewSecrets(BoundedReleases{SecretInterface: cs.CoreV1().Secrets(ns), Max: req.ReleaseBytes, MaxTotal: req.ReleasesBytes})
	d.Log = helm.Log
	helm.Releases = storage.Init(d)
	return helm, nil
}

// ErrReleaseTooLarge is a release record beyond BoundedReleases.Max, or a history beyond MaxTotal.
var ErrReleaseTooLarge = errors.New("release record too large")

// BoundedReleases is the Secrets client of Helm's storage driver: every Secret it reads is checked by
// streaming its record through the decoder to a byte limit (constant memory) before Helm decodes it.
// Helm's driver base64-decodes and gunzips each whole into memory: a 1 MiB Secret can inflate to a
// gigabyte.
type BoundedReleases struct {
	corev1client.SecretInterface
	// Max is the most one release record may decompress to; MaxTotal the most the records of one
	// read (a release's history, which Helm decodes at once) may decompress to together.
	Max, MaxTotal int64
}

// Get reads a release record, refused beyond Max.
func (b BoundedReleases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	s, err := b.SecretInterface.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	if _, err := releaseSize(s, b.Max); err != nil {
		return nil, err
	}
	return s, nil
}

// List reads release records, refused when one is beyond Max or all are beyond MaxTotal.
func (b BoundedReleases) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	l, err := b.SecretInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	var total int64
	for i := range l.Items {
		n, err := releaseSize(&l.Items[i], min(b.Max, b.MaxTotal-total))
		if err != nil {
			return nil, err
		}
		total += n
	}
	return l, nil
}

// releaseSize is how many bytes a release Secret's record decompresses to, or ErrReleaseTooLarge once
// it is beyond limit: the record (base64 of a gzip stream, or of JSON for records older than
// compression, as Helm's driver reads it) is streamed, never held.
func releaseSize(s *corev1.Secret, limit int64) (int64, error) {
	data := s.Data["release"]
	r := bufio.NewReader(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(data)))
	var src io.Reader = r
	if magic, _ := r.Peek(3); bytes.Equal(magic, []byte{0x1f, 0x8b, 0x08}) {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return 0, fmt.Errorf("release record %s: %w", s.Name, err)
		}
		defer gz.Close()
		src = gz
	}
	n, err := io.Copy(io.Discard, io.LimitReader(src, limit+1))
	if n > limit {
		return n, fmt.Errorf("%w: Secret %s decompresses to more than %d MiB", ErrReleaseTooLarge, s.Name, limit>>20)
	}
	if err != nil {
		return n, fmt.Errorf("release record %s: %w", s.Name, err)
	}
	return n, nil
}

// restGetter gives Helm a rest.Config, a RESTMapper and a discovery client, in one namespace.
type restGetter struct {
	cfg    *rest.Config
	ns     string
	mapper meta.RESTMapper
	dc     discovery.CachedDiscoveryInterface
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.dc, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(clientcmdapi.Config{}, &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.ns},
	})
}
