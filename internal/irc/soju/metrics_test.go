package soju

import (
	"net"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/soju/sojutest"
)

// listens are the listen directives of a rendered config.
func listens(t *testing.T, b *ircv1.SojuBouncer) []string {
	t.Helper()
	out, err := RenderConfig(b, login)
	if err != nil {
		t.Fatal(err)
	}
	back, err := parse(string(out))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range back {
		if d.Name == "listen" {
			got = append(got, strings.Join(d.Params, " "))
		}
	}
	return got
}

func withMetrics(b *ircv1.SojuBouncer, m *ircv1.SojuMetrics) *ircv1.SojuBouncer {
	b.Spec.Metrics = m
	return b
}

func TestMetrics(t *testing.T) {
	tests := []struct {
		name       string
		b          *ircv1.SojuBouncer
		wantListen string // "" for no metrics listener
		wantPort   int32
	}{
		{name: "no spec.metrics", b: full()},
		// The control of the hostile case below: only enabled puts anything in the pod or the Service.
		{name: "disabled with a port", b: withMetrics(full(), &ircv1.SojuMetrics{Port: 9191})},
		{name: "enabled, default port", b: withMetrics(full(), &ircv1.SojuMetrics{Enabled: true}), wantListen: "http+insecure+prometheus://:9090", wantPort: 9090},
		{name: "enabled, own port", b: withMetrics(sojutest.MinimalBouncer("irc", "tiny"), &ircv1.SojuMetrics{Enabled: true, Port: 9191}),
			wantListen: "http+insecure+prometheus://:9191", wantPort: 9191},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var metricsListens []string
			for _, l := range listens(t, tt.b) {
				if strings.Contains(l, "prometheus") {
					metricsListens = append(metricsListens, l)
				}
			}
			var cport *corev1.ContainerPort
			for _, p := range Deployment(tt.b, Options{}, "d").Spec.Template.Spec.Containers[0].Ports {
				if p.Name == MetricsPortName {
					cport = &p
				}
			}
			var sport *corev1.ServicePort
			for _, p := range Service(tt.b).Spec.Ports {
				if p.Name == MetricsPortName {
					sport = &p
				}
			}
			pm := PodMonitor(tt.b)
			for _, p := range Ports(tt.b) {
				if p.Name == MetricsPortName {
					t.Errorf("status ports list the metrics port: %+v", p)
				}
			}

			if tt.wantListen == "" {
				if len(metricsListens) != 0 || cport != nil || sport != nil || pm != nil {
					t.Fatalf("metrics not enabled, got listens %q, container port %+v, Service port %+v, PodMonitor %+v", metricsListens, cport, sport, pm)
				}
				return
			}
			if len(metricsListens) != 1 || metricsListens[0] != tt.wantListen {
				t.Errorf("metrics listens %q, want [%s]", metricsListens, tt.wantListen)
			}
			if cport == nil || cport.ContainerPort != tt.wantPort || cport.Protocol != corev1.ProtocolTCP {
				t.Errorf("container port %+v, want %d", cport, tt.wantPort)
			}
			if sport == nil || sport.Port != tt.wantPort || sport.TargetPort.StrVal != MetricsPortName {
				t.Errorf("Service port %+v, want %d to the container port %q", sport, tt.wantPort, MetricsPortName)
			}
			if pm == nil {
				t.Fatal("no PodMonitor")
			}
			if pm.Kind != "PodMonitor" || pm.APIVersion != "monitoring.coreos.com/v1" || pm.Name != tt.b.Name || pm.Namespace != tt.b.Namespace ||
				pm.OwnerReferences[0].Kind != "SojuBouncer" || !*pm.OwnerReferences[0].Controller || pm.Labels["app.kubernetes.io/name"] != AppName {
				t.Errorf("PodMonitor identity %+v %+v", pm.TypeMeta, pm.ObjectMeta)
			}
			// It selects exactly the bouncer's pod, on the port the container names.
			pod := Deployment(tt.b, Options{}, "d").Spec.Template
			for k, v := range pm.Spec.Selector.MatchLabels {
				if pod.Labels[k] != v {
					t.Errorf("PodMonitor selector %v does not match the pod's labels %v", pm.Spec.Selector.MatchLabels, pod.Labels)
				}
			}
			if len(pm.Spec.Selector.MatchLabels) == 0 || pm.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] != tt.b.Name {
				t.Errorf("PodMonitor selector %v is not the bouncer's own", pm.Spec.Selector.MatchLabels)
			}
			if e := pm.Spec.PodMetricsEndpoints; len(e) != 1 || e[0].Port != MetricsPortName || e[0].Path != "/metrics" || e[0].Scheme != "http" {
				t.Errorf("PodMonitor endpoints %+v", e)
			}
		})
	}
}

// TestMetricsListenSojuRules checks the rendered listen URI against what soju's cmd/soju does with it
// (read from its source after v0.10.1, where http+insecure+prometheus was added): url.Parse, the scheme,
// and u.Host handed to net.Listen, which must name no host so that the pod IP is served. soju's older
// http+prometheus takes only "localhost" as host, which no scraper outside the pod can reach: the
// rendered URI must not be that one.
func TestMetricsListenSojuRules(t *testing.T) {
	for _, port := range []int32{1024, 9090, 65535} {
		b := withMetrics(full(), &ircv1.SojuMetrics{Enabled: true, Port: port})
		uri := MetricsListenURI(b)
		u, err := url.Parse(uri)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		if u.Scheme != "http+insecure+prometheus" {
			t.Errorf("%s: scheme %q", uri, u.Scheme)
		}
		host, p, err := net.SplitHostPort(u.Host)
		if err != nil || host != "" || p != strings.TrimPrefix(u.Host, ":") || u.Path != "" {
			t.Errorf("%s: host %q port %q path %q, %v: want every address and the port", uri, host, p, u.Path, err)
		}
	}
}
