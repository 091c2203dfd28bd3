//go:build linux

package olm

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// release is an earlier build of the operator: its binary and its bundle, both made from its own source.
type release struct {
	commit string
	binary string
	bundle string
}

// previousRelease is the release test/olm/previous-release pins, as `make previous-release` exported and
// built it into bin/previous-<commit>/. The upgrade test installs it first so that the upgrade runs old code
// against old objects: labels, annotations, status field managers and pod templates as that release wrote
// them. Its bundle must carry the version the current catalog's channel starts from.
func previousRelease() release {
	b, err := os.ReadFile(filepath.Join(repoRoot, "test", "olm", "previous-release"))
	Expect(err).NotTo(HaveOccurred())
	commit := strings.TrimSpace(string(b))
	Expect(commit).To(MatchRegexp(`^[0-9a-f]{40}$`), "test/olm/previous-release holds a full commit hash")
	dir := filepath.Join(repoRoot, "bin", "previous-"+commit)
	r := release{
		commit: commit,
		binary: existing(filepath.Join(dir, "bin", "platform-operator"), "make previous-release"),
		bundle: existing(filepath.Join(dir, "bundle"), "make previous-release"),
	}

	csv := map[string]any{}
	b, err = os.ReadFile(filepath.Join(r.bundle, "manifests", csvFile))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(b, &csv)).To(Succeed())
	Expect(csv["spec"].(map[string]any)["version"]).To(Equal(firstVersion),
		"the previous release's bundle is not the version the upgrade starts from")
	return r
}
