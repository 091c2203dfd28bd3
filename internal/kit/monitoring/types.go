package monitoring

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is monitoring.coreos.com/v1, the Prometheus Operator's API.
	GroupVersion = schema.GroupVersion{Group: "monitoring.coreos.com", Version: "v1"}
	// SchemeBuilder registers PodMonitor.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds PodMonitor to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// PodMonitor asks a Prometheus run by the Prometheus Operator to scrape the pods its selector matches,
// in its own namespace.
// +kubebuilder:object:root=true
type PodMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodMonitorSpec `json:"spec,omitempty"`
}

// PodMonitorSpec selects the pods and says which of their ports to scrape.
type PodMonitorSpec struct {
	// Selector picks the pods by label.
	Selector metav1.LabelSelector `json:"selector"`
	// PodMetricsEndpoints are the endpoints scraped on each pod.
	PodMetricsEndpoints []PodMetricsEndpoint `json:"podMetricsEndpoints,omitempty"`
}

// PodMetricsEndpoint is one scraped endpoint of a pod.
type PodMetricsEndpoint struct {
	// Port is the name of the container port.
	Port string `json:"port,omitempty"`
	// Path is the HTTP path of the metrics.
	Path string `json:"path,omitempty"`
	// Scheme is http or https.
	Scheme string `json:"scheme,omitempty"`
}

// PodMonitorList is a list of PodMonitors.
// +kubebuilder:object:root=true
type PodMonitorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodMonitor `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PodMonitor{}, &PodMonitorList{})
}
