package catalyst

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
)

func realmPort(hostPort string) string {
	_, port, _ := net.SplitHostPort(hostPort)
	return port
}

// countingServer serves h on addr (host:0) over plain http and counts the requests it sees.
func countingServer(t *testing.T, addr string, h http.Handler) (host string, requests *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	requests = &atomic.Int64{}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return l.Addr().String(), requests
}

// TestRegistryAddressRules: with --catalyst-registries empty, a registry on a loopback address is refused
// when the connection is about to be made (the server sees no request), with an error naming the rule;
// listed, the same registry is asked.
func TestRegistryAddressRules(t *testing.T) {
	host, requests := countingServer(t, "127.0.0.1:0", registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	image := host + "/team/web:" + fullSHA

	_, found, err := (&Registry{}).Head(context.Background(), image, authn.NewMultiKeychain())
	if !errors.Is(err, ErrAddressRefused) || found {
		t.Fatalf("unlisted loopback registry: found %v, err %v; want ErrAddressRefused", found, err)
	}
	if !strings.Contains(err.Error(), "a loopback address") || !strings.Contains(err.Error(), "--catalyst-registries") {
		t.Errorf("err = %v: want it to name the rule (a loopback address, --catalyst-registries)", err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the refused registry saw %d requests, want none (refused at dial time)", n)
	}

	// A name that resolves to loopback is refused the same way: the rule is on the address dialled.
	_, port, _ := net.SplitHostPort(host)
	if _, _, err := (&Registry{}).Head(context.Background(), "localhost:"+port+"/team/web:"+fullSHA, authn.NewMultiKeychain()); !errors.Is(err, ErrAddressRefused) {
		t.Fatalf("localhost: err %v, want ErrAddressRefused", err)
	}

	// Positive control: listed (by host, or by host:port), it is asked and answers.
	for _, listed := range []string{"127.0.0.1", host} {
		_, found, err = (&Registry{Listed: []string{listed}}).Head(context.Background(), image, authn.NewMultiKeychain())
		if err != nil || found {
			t.Fatalf("listed %s: found %v, err %v; want not found, no error", listed, found, err)
		}
	}
	if requests.Load() == 0 {
		t.Fatal("the listed registry saw no request")
	}
}

// TestRegistryRealmRules: a registry that answers 401 with a bearer realm on another host is not
// followed there unless that host passes the same rule: a loopback or link-local realm of a listed
// registry is never contacted; listed, the realm is asked.
func TestRegistryRealmRules(t *testing.T) {
	// The realm: a token server on another loopback address (another host, 127.0.0.2).
	realmHost, realmRequests := countingServer(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"token":"t"}`)
	}))
	var realm atomic.Value
	regHost, _ := countingServer(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer t" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm.Load().(string)+`",service="registry"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	image := regHost + "/team/web:" + fullSHA

	tests := []struct {
		name, realm string
		listed      []string
		reason      string
	}{
		{"a loopback realm of a listed registry", "http://" + realmHost + "/token", []string{"127.0.0.1"}, "a loopback address"},
		{"a loopback realm named by a name", "http://localhost:" + realmPort(realmHost) + "/token", []string{"127.0.0.1"}, "a loopback address"},
		// Link-local and private realms (169.254.169.254, 10.0.0.0/8) are refused by the same check on the
		// dialled address (addrguard.TestCheck), tested there without connecting: this test sends nothing
		// beyond 127.0.0.0/8 even should the rule break.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			realm.Store(tt.realm)
			_, _, err := (&Registry{Listed: tt.listed}).Head(context.Background(), image, authn.NewMultiKeychain())
			if !errors.Is(err, ErrAddressRefused) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("err = %v, want ErrAddressRefused naming %q", err, tt.reason)
			}
		})
	}
	if n := realmRequests.Load(); n != 0 {
		t.Fatalf("the realm saw %d requests, want none", n)
	}

	// Positive control: the realm's host listed too, it is asked for a token and the check goes on.
	realm.Store("http://" + realmHost + "/token")
	_, found, err := (&Registry{Listed: []string{"127.0.0.1", "127.0.0.2"}}).Head(context.Background(), image, authn.NewMultiKeychain())
	if err != nil || found {
		t.Fatalf("listed realm: found %v, err %v; want not found (404 after the token), no error", found, err)
	}
	if realmRequests.Load() == 0 {
		t.Fatal("the listed realm was not asked")
	}
}

// TestRegistryQuotesNoAnswer: what a registry says in its answer's body reaches no error (and so no
// condition or event): only the status code does.
func TestRegistryQuotesNoAnswer(t *testing.T) {
	const secret = "INTERNAL-METADATA-TOKEN"
	for _, code := range []int{http.StatusInternalServerError, http.StatusUnauthorized, http.StatusForbidden, http.StatusTeapot} {
		host, _ := countingServer(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = io.WriteString(w, `{"errors":[{"code":"DENIED","message":"`+secret+`","detail":"`+secret+`"}]}`)
		}))
		_, _, err := (&Registry{Listed: []string{"127.0.0.1"}}).Head(context.Background(), host+"/team/web:"+fullSHA, authn.NewMultiKeychain())
		if err == nil {
			t.Fatalf("HTTP %d: no error", code)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("HTTP %d: the error quotes the answer: %v", code, err)
		}
		if !strings.Contains(err.Error(), "HTTP ") {
			t.Errorf("HTTP %d: the error does not give the status: %v", code, err)
		}
	}
}
