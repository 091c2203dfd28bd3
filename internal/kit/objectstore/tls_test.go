package objectstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/testutil/pki"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

// TestTLSWithCABundle runs versitygw with a certificate of a private CA: the store is reached over https
// with that CA as the bundle (control), and refused with no bundle (the system's roots) or another CA's.
// A URL without a scheme is https.
func TestTLSWithCABundle(t *testing.T) {
	ca := pki.TestCA(t, "store-ca")
	cert, key := ca.ServerFiles(t, "versitygw")
	srv, err := s3test.StartTLS(t.Context(), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	other := pki.TestCA(t, "other-ca")
	tests := []struct {
		name     string
		endpoint string
		bundle   []byte
		ok       bool
	}{
		{"the store's CA", srv.Endpoint, ca.PEM, true},
		{"no scheme is https", strings.TrimPrefix(srv.Endpoint, "https://"), ca.PEM, true},
		{"system roots", srv.Endpoint, nil, false},
		{"another CA", srv.Endpoint, other.PEM, false},
		{"plain http to a TLS port", "http://" + strings.TrimPrefix(srv.Endpoint, "https://"), ca.PEM, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := srv.Config("tls", "")
			cfg.Endpoint, cfg.CABundle = tt.endpoint, tt.bundle
			store, err := objectstore.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if err := store.CreateBucket(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			err = store.Check(t.Context())
			if tt.ok != (err == nil) {
				t.Fatalf("Check() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && (strings.Contains(err.Error(), srv.SecretAccessKey) || errors.Is(err, objectstore.ErrNoBucket)) {
				t.Fatalf("Check() = %v", err)
			}
			t.Logf("Check(): %v", err)
		})
	}
}
