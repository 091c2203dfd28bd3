package catalyst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operator/platform-operator/internal/catalyst/addrguard"
)

// Keychain reads the credentials of a kubernetes.io/dockerconfigjson Secret's data (its .dockerconfigjson
// key: {"auths": {"<registry>": {"auth": base64(user:password)} or {"username", "password"} or
// {"identitytoken"} or {"registrytoken"}}}). Registry keys may carry a scheme and a path
// (https://index.docker.io/v1/): only the host (and port) counts. A registry without an entry is asked
// anonymously.
//
// It stays hand-written on go-containerregistry's authn.AuthConfig and authn.FromConfig rather than
// using its pkg/authn/kubernetes keychain (NewFromPullSecrets, the kubelet's keyring), which does not
// behave the same: it compares hosts case-sensitively as globs (a key Registry.Example.com, or
// *.example.com, is matched differently), keeps a key's path as a prefix the image must start with, reads
// a Secret only when its type is kubernetes.io/dockerconfigjson and silently ignores one without the key
// (here a condition tells the user), and is a module of its own. authn.DefaultKeychain reads Docker's
// config files from disk through the process-wide $DOCKER_CONFIG, which suits one user, not a Secret per
// Project.
func Keychain(data map[string][]byte) (authn.Keychain, error) {
	raw, ok := data[corev1.DockerConfigJsonKey]
	if !ok {
		return nil, fmt.Errorf("it has no %s key (it must be a kubernetes.io/dockerconfigjson Secret)", corev1.DockerConfigJsonKey)
	}
	var cfg struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("its %s is not a Docker config: %w", corev1.DockerConfigJsonKey, err)
	}
	kc := keychain{}
	for key, auth := range cfg.Auths {
		kc[registryHost(key)] = auth
	}
	return kc, nil
}

// keychain maps registry hosts to their credentials.
type keychain map[string]authn.AuthConfig

// Resolve implements authn.Keychain.
func (k keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	host := registryHost(r.RegistryStr())
	auth, ok := k[host]
	if !ok && host == name.DefaultRegistry {
		auth, ok = k["docker.io"]
	}
	if !ok {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(auth), nil
}

// registryHost is the host[:port] of a Docker config key or registry name, lowercased: index.docker.io
// for Docker Hub's several spellings.
func registryHost(key string) string {
	key = strings.ToLower(strings.TrimSpace(key))
	if strings.Contains(key, "://") {
		if u, err := url.Parse(key); err == nil {
			key = u.Host
		}
	}
	key, _, _ = strings.Cut(key, "/")
	if key == "docker.io" || key == "registry-1.docker.io" {
		return name.DefaultRegistry
	}
	return key
}

// Registry asks image registries whether they hold an image. Plain http is used only for registries
// PlainHTTP allows; a request the registry library would otherwise send over plain http (it does so for
// private IPv4 addresses and .local hosts) is refused. Every connection (to the registry, to the bearer
// realm it names, to where it redirects) goes to a public address only, unless its host is in Listed: the
// rule is checked on the address dialled (addrguard), so neither a Project's registry nor a registry's
// answer can aim the operator at the cluster's network, the node or the cloud's metadata service. No
// message quotes a registry's answer: only its status code.
type Registry struct {
	// Insecure are the registries (host or host:port) spoken to over plain http besides loopback ones.
	Insecure []string
	// Listed are the registries (host or host:port; --catalyst-registries) connected to wherever their
	// address is; any other host only on a public address.
	Listed []string
	// Transport sends the requests instead of the guarded transport: for tests of what is sent, which
	// then connect nowhere. Nil in the operator.
	Transport http.RoundTripper
	// Timeout bounds one check; DefaultRegistryTimeout when zero.
	Timeout time.Duration
}

// ErrUnauthorized is a registry refusing the credentials (or their absence).
var ErrUnauthorized = errors.New("the registry refused the credentials")

// Head asks the registry for the manifest of image (<registry>/<repository>:<tag>) with a HEAD request.
// found is false, with no error, when the registry says the image or its repository does not exist.
// A refusal of the credentials is an error wrapping ErrUnauthorized; anything else (network, TLS, a
// server error) is an error to retry later.
func (r *Registry) Head(ctx context.Context, image string, kc authn.Keychain) (digest string, found bool, err error) {
	var opts []name.Option
	if PlainHTTP(registryOf(image), r.Insecure) {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.NewTag(image, opts...)
	if err != nil {
		return "", false, fmt.Errorf("image reference %s: %w", image, err)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultRegistryTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	next := r.Transport
	var refused refusal
	if next == nil {
		tr := &http.Transport{
			DialContext: addrguard.Dialer(func(host string) bool { return registryListed(host, r.Listed) }, refused.record),
			// No proxy: the rule is checked on the address connected to, which a proxy would hide.
			Proxy:                  nil,
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		}
		defer tr.CloseIdleConnections()
		next = tr
	}
	desc, err := remote.Head(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(kc),
		remote.WithTransport(plainHTTPGuard{next: next, insecure: r.Insecure}))
	if err == nil {
		return desc.Digest.String(), true, nil
	}
	if rf := refused.get(); rf != nil {
		return "", false, fmt.Errorf("%w: host %s resolves to %s, a %s address, which the operator asks only when the registry is listed (--catalyst-registries)",
			ErrAddressRefused, rf.Host, rf.Addr, rf.Reason)
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusNotFound:
			return "", false, nil
		case http.StatusUnauthorized, http.StatusForbidden:
			return "", false, fmt.Errorf("%w: it answered HTTP %d", ErrUnauthorized, terr.StatusCode)
		}
		for _, d := range terr.Errors {
			switch d.Code {
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode:
				return "", false, nil
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return "", false, fmt.Errorf("%w: it answered HTTP %d", ErrUnauthorized, terr.StatusCode)
			}
		}
		// The answer's body and its error list are the registry's words: only the status is quoted.
		return "", false, fmt.Errorf("the registry answered HTTP %d", terr.StatusCode)
	}
	return "", false, quietError(err)
}

// ErrAddressRefused is a registry, or a host a registry pointed at (its bearer realm, a redirect), whose
// address the operator does not connect to: not a public one, and the host not listed.
var ErrAddressRefused = errors.New("registry address refused")

// refusal keeps the first connection addrguard refused during one check.
type refusal struct {
	mu sync.Mutex
	r  *addrguard.Refusal
}

func (f *refusal) record(r addrguard.Refusal) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.r == nil {
		f.r = &r
	}
	return fmt.Errorf("%w: %s is a %s address", ErrAddressRefused, r.Addr, r.Reason)
}

func (f *refusal) get() *addrguard.Refusal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.r
}

// registryListed is whether host (a dialled host, without port) is one of listed, which name registries
// as host or host:port: a registry listed with a port lists its host.
func registryListed(host string, listed []string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, l := range listed {
		l = strings.ToLower(strings.TrimSpace(l))
		if h, _, err := net.SplitHostPort(l); err == nil {
			l = h
		}
		if l != "" && strings.TrimSuffix(l, ".") == host {
			return true
		}
	}
	return false
}

// quietError is a failed check's error without what came from the other side: a url.Error's URL (a
// realm's URL is the registry's choice) is reduced to its host, and a deadline is said as such.
func quietError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		host := ""
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Host
		}
		return fmt.Errorf("%s %s: %w", ue.Op, host, ue.Err)
	}
	return err
}

// RegistryAllowed says whether a Project may use registry (host or host:port): allowed is empty (every
// registry is), or lists registry itself, or lists its host alone (which allows every port). Names
// compare without regard to case; a host only matches itself (example.com does not allow
// example.com.evil.test nor registry.example.com).
func RegistryAllowed(registry string, allowed []string) bool {
	if len(allowed) == 0 {
		return true
	}
	registry = strings.ToLower(strings.TrimSpace(registry))
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	for _, a := range allowed {
		if a = strings.ToLower(strings.TrimSpace(a)); a != "" && (a == registry || a == host) {
			return true
		}
	}
	return false
}

// registryOf is the registry part of image.
func registryOf(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}

// plainHTTPGuard refuses plain-http requests to registries PlainHTTP does not allow.
type plainHTTPGuard struct {
	next     http.RoundTripper
	insecure []string
}

func (g plainHTTPGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !PlainHTTP(req.URL.Host, g.insecure) {
		return nil, fmt.Errorf("refusing plain http to registry %s: only loopback registries and those in --catalyst-insecure-registries are spoken to without TLS", req.URL.Host)
	}
	return g.next.RoundTrip(req)
}

// RegistryRetry is how soon a registry that could not be asked is asked again, given how long it has
// been failing: twice that, between 10 seconds and 5 minutes, so a registry that stays down is asked
// ever less often and never in a hot loop.
func RegistryRetry(failingFor time.Duration) time.Duration {
	return min(max(2*failingFor, 10*time.Second), 5*time.Minute)
}
