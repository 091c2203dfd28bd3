package objectstore_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// TestEncryptionHeaders checks what the store is asked for on every write. versitygw accepts the
// server-side encryption headers without implementing them, so the test records them in a reverse proxy on
// 127.0.0.1 in front of the real server (the writes still land there); a store that offers SSE does the
// encrypting. Control: without Encryption no write carries the header.
func TestEncryptionHeaders(t *testing.T) {
	target, err := url.Parse(server.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []string
	)
	proxy := httputil.NewSingleHostReverseProxy(target)
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Object writes: the single PUT and the multipart upload's initiation (POST ?uploads); the parts of
		// an upload inherit the initiation's encryption.
		_, initiation := r.URL.Query()["uploads"]
		if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "" || r.Method == http.MethodPost && initiation {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.Header.Get("X-Amz-Server-Side-Encryption")+" "+r.Header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"))
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	defer recorder.Close()
	bucket(t, "encryption")
	tests := []struct {
		name string
		enc  *objectstore.Encryption
		want string
	}{
		{"none", nil, "  "},
		{"SSE-S3", &objectstore.Encryption{Mode: objectstore.SSES3}, " AES256 "},
		{"SSE-KMS", &objectstore.Encryption{Mode: objectstore.SSEKMS, KMSKeyID: "alias/backups"}, " aws:kms alias/backups"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := server.Config("encryption", "platform")
			cfg.Endpoint, cfg.Encryption = recorder.URL, tt.enc
			store, err := objectstore.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := store.Scope("team-a")
			mu.Lock()
			seen = nil
			mu.Unlock()
			if _, err := h.Put(t.Context(), tt.name+"/data", strings.NewReader("streamed"), ""); err != nil {
				t.Fatal(err)
			}
			if err := h.PutBytes(t.Context(), tt.name+"/manifest.json", []byte("{}"), ""); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 {
				t.Fatalf("recorded writes %q, want the upload's initiation and the manifest's PUT", seen)
			}
			for _, s := range seen {
				if _, hdr, _ := strings.Cut(s, " "); " "+hdr != tt.want {
					t.Errorf("write %q: encryption headers %q, want %q", s, " "+hdr, tt.want)
				}
			}
		})
	}
}
