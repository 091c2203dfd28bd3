package ergo

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestConfigMap(t *testing.T) {
	n := referenceNetwork()
	rendered, err := RenderConfig(BuildConfig(n, true))
	if err != nil {
		t.Fatal(err)
	}
	cm := ConfigMap(n, rendered)
	if cm.Name != "my-network-config" {
		t.Errorf("name = %q", cm.Name)
	}
	if want := map[string]string{"ircd.yaml": string(rendered)}; !reflect.DeepEqual(cm.Data, want) {
		t.Errorf("data has %d keys, want only ircd.yaml holding the rendered config", len(cm.Data))
	}
	if len(cm.BinaryData) != 0 {
		t.Error("binaryData is set")
	}
	// The oper password hash lives only in the user's Secret: a bcrypt hash, or any password key,
	// in the ConfigMap would hand it to everyone who can read ConfigMaps.
	for _, marker := range []string{"$2a$", "$2b$", "$2y$"} {
		if strings.Contains(cm.Data[ConfigKey], marker) {
			t.Errorf("ConfigMap contains %q", marker)
		}
	}
	if regexp.MustCompile(`(?m)^\s*password:`).MatchString(cm.Data[ConfigKey]) {
		t.Error("ConfigMap has a password key")
	}
	// The Deployment mounts this ConfigMap's key as the file ergo is started with.
	d := Deployment(n, Options{}, "")
	found := false
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil && src.ConfigMap.Name == cm.Name && len(src.ConfigMap.Items) == 1 && src.ConfigMap.Items[0].Key == ConfigKey {
				found = true
			}
		}
	}
	if !found {
		t.Error("the Deployment does not mount the ConfigMap's ircd.yaml")
	}
}
