package manager

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

func TestWebhookServer(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		opts    webhook.Options
		wantErr []string
	}{
		{name: "certificate and key", files: []string{"tls.crt", "tls.key"}},
		{name: "no certificate", files: nil, wantErr: []string{"tls.crt is missing", "tls.key is missing", "--enable-webhooks=false"}},
		{name: "a key without its certificate", files: []string{"tls.key"}, wantErr: []string{"tls.crt is missing"}},
		{name: "other file names", files: []string{"serving.pem", "serving-key.pem"},
			opts: webhook.Options{CertName: "serving.pem", KeyName: "serving-key.pem"}},
		{name: "other file names, default ones present", files: []string{"tls.crt", "tls.key"},
			opts: webhook.Options{CertName: "serving.pem", KeyName: "serving-key.pem"}, wantErr: []string{"serving.pem is missing", "serving-key.pem is missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			opts := tt.opts
			opts.CertDir = dir
			srv, err := WebhookServer(true, opts)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := srv.(*DisabledWebhookServer); ok {
				t.Fatal("an enabled server is the disabled one")
			}
		})
	}
}

func TestDisabledWebhookServer(t *testing.T) {
	// A directory without certificates does not matter when webhooks are off.
	srv, err := WebhookServer(false, webhook.Options{CertDir: filepath.Join(t.TempDir(), "absent")})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := srv.(*DisabledWebhookServer)
	if !ok {
		t.Fatalf("server %T, want *DisabledWebhookServer", srv)
	}
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	d.Register("/validate-a", h)
	d.Register("/validate-b", h)
	if got := d.Paths(); !slices.Equal(got, []string{"/validate-a", "/validate-b"}) {
		t.Errorf("paths %q", got)
	}
	if _, pattern := d.WebhookMux().Handler(httptest.NewRequest(http.MethodPost, "/validate-a", nil)); pattern != "/validate-a" {
		t.Errorf("the mux does not show /validate-a as taken (pattern %q): the webhook builder would not see it", pattern)
	}
	if d.NeedLeaderElection() {
		t.Error("needs leader election")
	}
	if err := d.Start(t.Context()); err != nil {
		t.Errorf("Start: %v", err)
	}
	if err := d.StartedChecker()(nil); err != nil {
		t.Errorf("StartedChecker: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a path twice did not panic")
		}
	}()
	d.Register("/validate-a", h)
}
