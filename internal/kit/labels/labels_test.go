package labels

import (
	"testing"

	k8slabels "k8s.io/apimachinery/pkg/labels"
)

func TestLabels(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		managed bool
	}{
		{name: "a child's labels", labels: Labels("ergo", "net"), managed: true},
		{name: "selector labels alone", labels: SelectorLabels("ergo", "net"), managed: false},
		{name: "another manager", labels: map[string]string{ManagedByLabel: "helm"}, managed: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsManaged(tt.labels); got != tt.managed {
				t.Errorf("IsManaged(%v) = %v, want %v", tt.labels, got, tt.managed)
			}
			if got := ManagedSelector().Matches(k8slabels.Set(tt.labels)); got != tt.managed {
				t.Errorf("ManagedSelector matches %v = %v, want %v", tt.labels, got, tt.managed)
			}
		})
	}
	l := Labels("ergo", "net")
	if l[PartOfLabel] != OperatorName || l[NameLabel] != "ergo" || l[InstanceLabel] != "net" || len(l) != 4 {
		t.Errorf("Labels = %v", l)
	}
	if got := Annotation("config-digest"); got != "platform-operator.josie.cloud/config-digest" {
		t.Errorf("Annotation = %q", got)
	}
}
