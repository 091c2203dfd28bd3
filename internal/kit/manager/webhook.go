package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// DefaultWebhookCertDir is where the webhook server reads tls.crt and tls.key unless told otherwise:
// controller-runtime's default, and where OLM mounts the certificate it makes for a CSV's
// webhookdefinitions (config/default mounts cert-manager's Secret there too).
var DefaultWebhookCertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")

// WebhookServer is the manager's webhook server. Enabled, it is controller-runtime's server serving
// opts, and it fails here, before the manager starts, when opts.CertDir lacks the certificate or its key
// (the server would only fail later, at start, with a bare "no such file"). Disabled, it is a
// DisabledWebhookServer: the groups still register their webhooks, nothing serves them.
func WebhookServer(enabled bool, opts webhook.Options) (webhook.Server, error) {
	if !enabled {
		return &DisabledWebhookServer{}, nil
	}
	dir := opts.CertDir
	if dir == "" {
		dir = DefaultWebhookCertDir
	}
	var errs []error
	for _, name := range []string{cmp.Or(opts.CertName, "tls.crt"), cmp.Or(opts.KeyName, "tls.key")} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("%s is missing", filepath.Join(dir, name))
			}
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("admission webhooks need a serving certificate in %s (OLM and config/default mount one there; "+
			"--webhook-cert-dir names another directory, --enable-webhooks=false serves none): %w", dir, err)
	}
	return webhook.NewServer(opts), nil
}

// DisabledWebhookServer is the webhook server of an operator run with --enable-webhooks=false: it takes
// the groups' registrations, so their Setup runs unchanged, and serves none of them. The API server's
// webhook configurations must then not point at this process; the controllers still report what a
// webhook would have refused.
type DisabledWebhookServer struct {
	mu    sync.Mutex
	paths []string
	mux   http.ServeMux
}

var _ webhook.Server = (*DisabledWebhookServer)(nil)

// NeedLeaderElection is false: there is nothing to lead.
func (*DisabledWebhookServer) NeedLeaderElection() bool { return false }

// Register records path, served by nobody. Like controller-runtime's server, it refuses a path twice.
func (s *DisabledWebhookServer) Register(path string, hook http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.paths, path) {
		panic(fmt.Sprintf("can't register duplicate path: %v", path))
	}
	s.paths = append(s.paths, path)
	// The mux is what the webhook builder consults to tell whether a path is taken.
	s.mux.Handle(path, hook)
}

// Paths are the registered webhooks' paths, in registration order.
func (s *DisabledWebhookServer) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

// Start returns at once: no listener, no certificate.
func (*DisabledWebhookServer) Start(context.Context) error { return nil }

// StartedChecker is always healthy: a disabled server has nothing to wait for.
func (*DisabledWebhookServer) StartedChecker() healthz.Checker { return healthz.Ping }

// WebhookMux holds the registered handlers, never served.
func (s *DisabledWebhookServer) WebhookMux() *http.ServeMux { return &s.mux }
