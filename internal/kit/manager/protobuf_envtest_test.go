package manager_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ircv1alpha1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// wireLog records the method, path and content headers of every request a config's clients send.
type wireLog struct {
	mu   sync.Mutex
	reqs []wireRequest
}

type wireRequest struct{ method, path, contentType, accept string }

func (l *wireLog) RoundTripper(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, wireRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Accept")})
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

// find is the last request with method whose path ends with suffix.
func (l *wireLog) find(method, suffix string) (wireRequest, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.reqs) - 1; i >= 0; i-- {
		if r := l.reqs[i]; r.method == method && strings.HasSuffix(r.path, suffix) {
			return r, true
		}
	}
	return wireRequest{}, false
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestProtobufOnTheWire: a manager built by New reads built-in kinds as protobuf and custom resources as
// JSON (controller-runtime's choice per kind, which New keeps by refusing a config-wide ContentType), and
// the events of a broadcaster the caller gives (main.go's) are sent as protobuf. The control is a manager
// without a broadcaster, whose events controller-runtime sends as JSON: the recorded headers tell the two
// apart.
func TestProtobufOnTheWire(t *testing.T) {
	env := sharedEnv

	bad := rest.CopyConfig(env.Config)
	bad.ContentType = runtime.ContentTypeProtobuf
	if _, err := manager.New(bad, manager.Options{}, platform.Capabilities{}); err == nil {
		t.Error("New accepted a config-wide protobuf ContentType, which custom resources cannot speak")
	}

	for _, tc := range []struct {
		name       string
		broadcast  bool
		wantEvents string
	}{
		{name: "the caller's broadcaster", broadcast: true, wantEvents: runtime.ContentTypeProtobuf},
		{name: "control: controller-runtime's broadcaster", broadcast: false, wantEvents: runtime.ContentTypeJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ns, err := testenv.CreateNamespace(ctx, env.Client, "wire")
			if err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
			if err := env.Client.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			log := &wireLog{}
			cfg := rest.CopyConfig(env.Config)
			cfg.Wrap(log.RoundTripper)
			opts := manager.Options{Options: ctrl.Options{
				Metrics:                metricsserver.Options{BindAddress: "0"},
				HealthProbeBindAddress: "0",
			}}
			if tc.broadcast {
				opts.EventBroadcaster = record.NewBroadcaster()
			}
			mgr, err := manager.New(cfg, opts, platform.Capabilities{})
			if err != nil {
				t.Fatal(err)
			}
			mctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- mgr.Start(mctx) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Errorf("manager: %v", err)
				}
			}()

			if !mgr.GetCache().WaitForCacheSync(ctx) {
				t.Fatal("cache not started")
			}
			// A built-in kind through the cache (its informer's list) and a custom resource directly.
			if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
				t.Fatal(err)
			}
			if err := mgr.GetAPIReader().List(ctx, &ircv1alpha1.ErgoNetworkList{}, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			mgr.GetEventRecorderFor("wire-test").Event(cm, corev1.EventTypeNormal, "WireTest", "recorded")

			if r, ok := log.find(http.MethodGet, "/configmaps"); !ok {
				t.Error("no list of ConfigMaps recorded")
			} else if !strings.HasPrefix(r.accept, runtime.ContentTypeProtobuf) {
				t.Errorf("ConfigMaps listed with Accept %q, want protobuf", r.accept)
			}
			if r, ok := log.find(http.MethodGet, "/ergonetworks"); !ok {
				t.Error("no list of ErgoNetworks recorded")
			} else if !strings.HasPrefix(r.accept, runtime.ContentTypeJSON) {
				t.Errorf("ErgoNetworks listed with Accept %q, want JSON", r.accept)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if r, ok := log.find(http.MethodPost, "/namespaces/"+ns+"/events"); ok {
					if r.contentType != tc.wantEvents {
						t.Errorf("event sent as %q, want %q", r.contentType, tc.wantEvents)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no event sent in 30s")
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
