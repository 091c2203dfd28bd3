package openshift

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// makeVars reads Makefile variables as make computes them (defaults, or the overrides passed in args).
func makeVars(t testing.TB, names []string, overrides ...string) map[string]string {
	t.Helper()
	rule := `openshift-test-print-vars: ; @$(foreach v,$(OPENSHIFT_TEST_VARS),printf '%s=%s\n' '$(v)' '$($(v))';)`
	args := append([]string{"--eval=" + rule, "openshift-test-print-vars", "OPENSHIFT_TEST_VARS=" + strings.Join(names, " ")}, overrides...)
	out := runMake(t, args...)
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	for _, n := range names {
		if vars[n] == "" {
			t.Errorf("the Makefile does not set %s", n)
		}
	}
	return vars
}

// splitRef splits an image reference into its repository's last path element and its tag.
func splitRef(ref string) (name, tag string) {
	last := ref[strings.LastIndex(ref, "/")+1:]
	name, tag, _ = strings.Cut(last, ":")
	return name, tag
}

// TestParamsMatchTheMakefile is what keeps config/openshift in step with the Makefile's image variables:
// params.env must be byte for byte what `make openshift-params` writes (make verify rewrites it, so a
// VERSION or channel change shows up as a diff to commit), and the internal-registry images must be the
// Makefile's IMG, BUNDLE_IMG, CATALOG_IMG and FLEET_AGENT_IMG under another registry: same image names, same tags.
func TestParamsMatchTheMakefile(t *testing.T) {
	root := repoRoot(t)
	committedFile := filepath.Join(root, "config", "openshift", "params", "params.env")
	committed, err := os.ReadFile(committedFile)
	if err != nil {
		t.Fatal(err)
	}
	generatedFile := filepath.Join(t.TempDir(), "params.env")
	runMake(t, "openshift-params", "OPENSHIFT_PARAMS="+generatedFile)
	generated, err := os.ReadFile(generatedFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, generated) {
		t.Errorf("config/openshift/params/params.env is out of date: run `make openshift-params` and commit it.\ncommitted:\n%s\nMakefile:\n%s", committed, generated)
	}

	vars := makeVars(t, []string{"VERSION", "DEFAULT_CHANNEL", "IMG", "BUNDLE_IMG", "CATALOG_IMG", "FLEET_AGENT_IMG",
		"OPENSHIFT_NAMESPACE", "OPENSHIFT_REGISTRY", "OPENSHIFT_IMG", "OPENSHIFT_BUNDLE_IMG", "OPENSHIFT_CATALOG_IMG",
		"OPENSHIFT_FLEET_AGENT_IMG"})
	p := readParams(t, generatedFile)
	for key, want := range map[string]string{
		"namespace":       vars["OPENSHIFT_NAMESPACE"],
		"operatorImage":   vars["OPENSHIFT_IMG"],
		"bundleImage":     vars["OPENSHIFT_BUNDLE_IMG"],
		"catalogImage":    vars["OPENSHIFT_CATALOG_IMG"],
		"fleetAgentImage": vars["OPENSHIFT_FLEET_AGENT_IMG"],
		"channel":         vars["DEFAULT_CHANNEL"],
	} {
		if p[key] != want {
			t.Errorf("make openshift-params writes %s=%s, want %s", key, p[key], want)
		}
	}
	if vars["OPENSHIFT_REGISTRY"] != internalRegistry {
		t.Errorf("OPENSHIFT_REGISTRY defaults to %s, want the internal registry's service %s", vars["OPENSHIFT_REGISTRY"], internalRegistry)
	}
	for _, pair := range [][2]string{{"IMG", "OPENSHIFT_IMG"}, {"BUNDLE_IMG", "OPENSHIFT_BUNDLE_IMG"}, {"CATALOG_IMG", "OPENSHIFT_CATALOG_IMG"},
		{"FLEET_AGENT_IMG", "OPENSHIFT_FLEET_AGENT_IMG"}} {
		pubName, pubTag := splitRef(vars[pair[0]])
		name, tag := splitRef(vars[pair[1]])
		if name != pubName || tag != pubTag {
			t.Errorf("%s=%s but %s=%s: the image built in the cluster should have the same name and tag", pair[0], vars[pair[0]], pair[1], vars[pair[1]])
		}
		if tag != "v"+vars["VERSION"] {
			t.Errorf("%s is tagged %s, VERSION is %s", pair[1], tag, vars["VERSION"])
		}
		if want := vars["OPENSHIFT_REGISTRY"] + "/" + vars["OPENSHIFT_NAMESPACE"] + "/" + name + ":" + tag; vars[pair[1]] != want {
			t.Errorf("%s=%s, want %s: the internal registry serves <project>/<stream>:<tag>", pair[1], vars[pair[1]], want)
		}
	}

	// Overrides reach the file: another project and version.
	other := filepath.Join(t.TempDir(), "params.env")
	runMake(t, "openshift-params", "OPENSHIFT_PARAMS="+other, "OPENSHIFT_NAMESPACE="+otherNamespace, "VERSION=9.8.7")
	po := readParams(t, other)
	if want := internalRegistry + "/" + otherNamespace + "/platform-operator-catalog:v9.8.7"; po["namespace"] != otherNamespace || po["catalogImage"] != want {
		t.Errorf("make openshift-params OPENSHIFT_NAMESPACE=%s VERSION=9.8.7 writes namespace=%s catalogImage=%s, want %s and %s",
			otherNamespace, po["namespace"], po["catalogImage"], otherNamespace, want)
	}
}
