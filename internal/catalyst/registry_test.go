package catalyst

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

func dockerConfig(json string) map[string][]byte {
	return map[string][]byte{corev1.DockerConfigJsonKey: []byte(json)}
}

func TestKeychain(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("u:p"))
	tests := []struct {
		name     string
		data     map[string][]byte
		registry string
		want     *authn.AuthConfig // nil: anonymous
		wantErr  string
	}{
		{"auth field", dockerConfig(`{"auths":{"ghcr.io":{"auth":"` + basic + `"}}}`), "ghcr.io", &authn.AuthConfig{Username: "u", Password: "p"}, ""},
		{"username and password", dockerConfig(`{"auths":{"127.0.0.1:5000":{"username":"a","password":"b"}}}`), "127.0.0.1:5000",
			&authn.AuthConfig{Username: "a", Password: "b"}, ""},
		{"a key with scheme and path", dockerConfig(`{"auths":{"https://Registry.Example.com/v2/":{"identitytoken":"t"}}}`), "registry.example.com",
			&authn.AuthConfig{IdentityToken: "t"}, ""},
		{"Docker Hub's old key", dockerConfig(`{"auths":{"https://index.docker.io/v1/":{"auth":"` + basic + `"}}}`), "docker.io",
			&authn.AuthConfig{Username: "u", Password: "p"}, ""},
		{"another registry is anonymous", dockerConfig(`{"auths":{"ghcr.io":{"auth":"` + basic + `"}}}`), "quay.io", nil, ""},
		{"the port counts", dockerConfig(`{"auths":{"127.0.0.1:5000":{"auth":"` + basic + `"}}}`), "127.0.0.1:6000", nil, ""},
		{"not a dockerconfigjson Secret", map[string][]byte{"config.json": []byte("{}")}, "", nil, "has no .dockerconfigjson key"},
		{"not JSON", dockerConfig(`auths:`), "", nil, "is not a Docker config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc, err := Keychain(tt.data)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			reg, err := name.NewRegistry(tt.registry)
			if err != nil {
				t.Fatal(err)
			}
			a, err := kc.Resolve(reg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = &authn.AuthConfig{}
			}
			if got.Username != want.Username || got.Password != want.Password || got.IdentityToken != want.IdentityToken {
				t.Fatalf("credentials = %+v, want %+v", got, want)
			}
		})
	}
}

// TestRegistryHead asks a real registry (in-process, on 127.0.0.1, with basic authentication).
func TestRegistryHead(t *testing.T) {
	reg := catalysttest.StartRegistry("builder", "s3cret")
	defer reg.Close()
	image := reg.Host + "/team/web:" + fullSHA
	digest, err := reg.Push(image)
	if err != nil {
		t.Fatal(err)
	}
	good, err := Keychain(map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON()})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := Keychain(dockerConfig(`{"auths":{"` + reg.Host + `":{"username":"builder","password":"wrong"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := &Registry{Listed: []string{"127.0.0.1"}}
	tests := []struct {
		name       string
		image      string
		kc         authn.Keychain
		wantFound  bool
		wantDigest string
		wantErr    error
	}{
		{"present", image, good, true, digest, nil},
		{"another tag", reg.Host + "/team/web:a1b2c3d", good, false, "", nil},
		{"another repository", reg.Host + "/team/api:" + fullSHA, good, false, "", nil},
		{"wrong password", image, bad, false, "", ErrUnauthorized},
		{"no credentials", image, authn.NewMultiKeychain(), false, "", ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, found, err := r.Head(context.Background(), tt.image, tt.kc)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if found != tt.wantFound || d != tt.wantDigest {
				t.Fatalf("Head = %q %v, want %q %v", d, found, tt.wantDigest, tt.wantFound)
			}
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		down := catalysttest.StartRegistry("", "")
		host := down.Host
		down.Close()
		_, found, err := (&Registry{Timeout: 5 * time.Second, Listed: []string{"127.0.0.1"}}).Head(context.Background(), host+"/team/web:a1b2c3d", authn.NewMultiKeychain())
		if err == nil || found || errors.Is(err, ErrUnauthorized) {
			t.Fatalf("a closed port: found %v, err %v", found, err)
		}
	})
}

// recordingTransport records the requests' URLs and answers nothing.
type recordingTransport struct{ urls []string }

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.urls = append(r.urls, req.URL.String())
	return nil, errors.New("no network in this test")
}

func TestRegistryRefusesPlainHTTP(t *testing.T) {
	// The registry library speaks plain http to private addresses on its own; the operator does not.
	rec := &recordingTransport{}
	_, _, err := (&Registry{Transport: rec}).Head(context.Background(), "10.1.2.3:5000/team/web:a1b2c3d", authn.NewMultiKeychain())
	if err == nil {
		t.Fatal("no error without a network")
	}
	for _, u := range rec.urls {
		if strings.HasPrefix(u, "http://") {
			t.Fatalf("a plain http request went out: %s", u)
		}
	}
	if !strings.Contains(err.Error(), "refusing plain http") && len(rec.urls) == 0 {
		t.Fatalf("err = %v and no request", err)
	}

	// Listed as insecure, it is asked over http.
	rec = &recordingTransport{}
	_, _, _ = (&Registry{Transport: rec, Insecure: []string{"10.1.2.3:5000"}}).Head(context.Background(), "10.1.2.3:5000/team/web:a1b2c3d", authn.NewMultiKeychain())
	plain := false
	for _, u := range rec.urls {
		plain = plain || strings.HasPrefix(u, "http://10.1.2.3:5000/")
	}
	if !plain {
		t.Fatalf("an insecure registry was not asked over http: %q", rec.urls)
	}
}

func TestRegistryRetry(t *testing.T) {
	tests := []struct{ failingFor, want time.Duration }{
		{0, 10 * time.Second},
		{3 * time.Second, 10 * time.Second},
		{time.Minute, 2 * time.Minute},
		{time.Hour, 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := RegistryRetry(tt.failingFor); got != tt.want {
			t.Errorf("RegistryRetry(%s) = %s, want %s", tt.failingFor, got, tt.want)
		}
	}
}

func TestRegistryAllowed(t *testing.T) {
	allowed := []string{"ghcr.io", "Registry.Internal:5000", " image-registry.openshift-image-registry.svc:5000 "}
	tests := []struct {
		registry string
		allowed  []string
		want     bool
	}{
		{"anything.example.com", nil, true},
		{"ghcr.io", allowed, true},
		{"ghcr.io:443", allowed, true},
		{"GHCR.io", allowed, true},
		{"registry.internal:5000", allowed, true},
		{"image-registry.openshift-image-registry.svc:5000", allowed, true},
		// Hostile: near misses of a listed registry are refused.
		{"registry.internal:5001", allowed, false},
		{"registry.internal", allowed, false},
		{"ghcr.io.evil.test", allowed, false},
		{"evilghcr.io", allowed, false},
		{"docker.io", allowed, false},
		{"127.0.0.1:5000", allowed, false},
	}
	for _, tt := range tests {
		if got := RegistryAllowed(tt.registry, tt.allowed); got != tt.want {
			t.Errorf("RegistryAllowed(%q, %q) = %v, want %v", tt.registry, tt.allowed, got, tt.want)
		}
	}
}

func TestRegistryTimeout(t *testing.T) {
	// A registry that answers nothing: the check gives up at its timeout instead of holding its worker.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	host := strings.TrimPrefix(srv.URL, "http://")
	_, found, err := (&Registry{Timeout: 200 * time.Millisecond, Listed: []string{"127.0.0.1"}}).Head(context.Background(), host+"/team/web:"+fullSHA, authn.NewMultiKeychain())
	if !errors.Is(err, context.DeadlineExceeded) || found {
		t.Fatalf("a registry that never answers: found %v, err %v; want the deadline exceeded", found, err)
	}
	// Positive control: the same server answering at once is asked without error.
	fast := httptest.NewServer(http.NotFoundHandler())
	defer fast.Close()
	_, found, err = (&Registry{Timeout: 200 * time.Millisecond, Listed: []string{"127.0.0.1"}}).Head(context.Background(),
		strings.TrimPrefix(fast.URL, "http://")+"/team/web:"+fullSHA, authn.NewMultiKeychain())
	if err != nil || found {
		t.Fatalf("a registry that answers 404: found %v, err %v", found, err)
	}
}
