package catalysttest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Registry is a real OCI registry (go-containerregistry's pkg/registry) served in-process on 127.0.0.1,
// behind HTTP basic authentication when it has a user. A test package starts one and closes it when it
// ends; it keeps its images in memory.
type Registry struct {
	// Host is the registry's 127.0.0.1:port, the spec.build.registry of a Project that uses it.
	Host string
	// User and Password are the credentials it asks for; none when User is empty.
	User, Password string

	server *httptest.Server
}

// StartRegistry starts a registry on a free 127.0.0.1 port. With a user, every request must carry
// user:password; without, it is anonymous.
func StartRegistry(user, password string) *Registry {
	r := &Registry{User: user, Password: password}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if user != "" {
		h = r.basicAuth(h)
	}
	r.server = httptest.NewServer(h)
	r.Host = r.server.Listener.Addr().String()
	return r
}

func (r *Registry) basicAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != r.User || p != r.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="catalysttest"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// Close stops the registry.
func (r *Registry) Close() { r.server.Close() }

// Push pushes a small random image as image (<Host>/<repository>:<tag>) with the registry's credentials,
// as a build would, and returns its manifest digest.
func (r *Registry) Push(image string) (string, error) {
	img, err := random.Image(256, 1)
	if err != nil {
		return "", err
	}
	auth := authn.Anonymous
	if r.User != "" {
		auth = &authn.Basic{Username: r.User, Password: r.Password}
	}
	if err := crane.Push(img, image, crane.WithAuth(auth)); err != nil {
		return "", fmt.Errorf("push %s: %w", image, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// DockerConfigJSON is a Docker config with the registry's credentials, the content of a
// kubernetes.io/dockerconfigjson Secret.
func (r *Registry) DockerConfigJSON() []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(r.User + ":" + r.Password))
	b, err := json.Marshal(map[string]any{"auths": map[string]any{r.Host: map[string]string{"auth": auth}}})
	if err != nil {
		panic(err)
	}
	return b
}

// Secret is the kubernetes.io/dockerconfigjson Secret ns/name holding the registry's credentials.
func (r *Registry) Secret(ns, name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: r.DockerConfigJSON()},
	}
}
