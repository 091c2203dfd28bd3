package soju

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/monitoring"
)

const (
	// MetricsPortName names the metrics port on the container and on the Service; the PodMonitor scrapes
	// it by this name.
	MetricsPortName = "metrics"
	// DefaultMetricsPort is spec.metrics.port when it is left out (the CRD defaults it to this).
	DefaultMetricsPort int32 = 9090
	// MetricsPath is where soju's metrics listener serves: its handler answers every path.
	MetricsPath = "/metrics"
	// MetricsScheme is soju's listener for Prometheus metrics on any address: plain HTTP. soju's
	// http+prometheus:// (every release since v0.3.0) binds only to localhost, which nothing outside the
	// pod can scrape; http+insecure+prometheus:// came after v0.10.1.
	MetricsScheme = "http+insecure+prometheus"
)

// MetricsEnabled says whether b asks for soju's metrics endpoint.
func MetricsEnabled(b *ircv1.SojuBouncer) bool {
	return b.Spec.Metrics != nil && b.Spec.Metrics.Enabled
}

// MetricsPort is the metrics port of b: spec.metrics.port, or DefaultMetricsPort.
func MetricsPort(b *ircv1.SojuBouncer) int32 {
	if m := b.Spec.Metrics; m != nil && m.Port != 0 {
		return m.Port
	}
	return DefaultMetricsPort
}

// MetricsListenURI is soju's listen directive for the metrics endpoint of b: every address of the pod
// (":port"), so that the pod IP is scraped.
func MetricsListenURI(b *ircv1.SojuBouncer) string {
	return MetricsScheme + "://:" + strconv.Itoa(int(MetricsPort(b)))
}

// metricsContainerPort is the container port the PodMonitor names; nil without metrics.
func metricsContainerPort(b *ircv1.SojuBouncer) *corev1.ContainerPort {
	if !MetricsEnabled(b) {
		return nil
	}
	return &corev1.ContainerPort{Name: MetricsPortName, ContainerPort: MetricsPort(b), Protocol: corev1.ProtocolTCP}
}

// metricsServicePort is the Service port in front of the metrics endpoint, for scrapers that go through
// Services; nil without metrics.
func metricsServicePort(b *ircv1.SojuBouncer) *corev1.ServicePort {
	if !MetricsEnabled(b) {
		return nil
	}
	return &corev1.ServicePort{Name: MetricsPortName, Protocol: corev1.ProtocolTCP, Port: MetricsPort(b),
		TargetPort: intstr.FromString(MetricsPortName)}
}

// PodMonitorName is the PodMonitor of a bouncer with metrics.
func PodMonitorName(b *ircv1.SojuBouncer) string { return b.Name }

// PodMonitor asks the Prometheus Operator to scrape the bouncer's pod on its metrics port; nil when b
// does not enable metrics.
func PodMonitor(b *ircv1.SojuBouncer) *monitoring.PodMonitor {
	if !MetricsEnabled(b) {
		return nil
	}
	return &monitoring.PodMonitor{
		TypeMeta:   metav1.TypeMeta{APIVersion: monitoring.GroupVersion.String(), Kind: "PodMonitor"},
		ObjectMeta: ChildMeta(b).Object(PodMonitorName(b)),
		Spec: monitoring.PodMonitorSpec{
			Selector:            metav1.LabelSelector{MatchLabels: SelectorLabels(b)},
			PodMetricsEndpoints: []monitoring.PodMetricsEndpoint{{Port: MetricsPortName, Path: MetricsPath, Scheme: "http"}},
		},
	}
}
