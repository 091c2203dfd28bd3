//go:build linux

package olm

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

const (
	packageName = "platform-operator"
	channelName = "candidate-v0"
	csvFile     = "platform-operator.clusterserviceversion.yaml"
)

// newCatalog writes a file-based catalog to dir from the committed one: package.yaml and the channel as
// committed, and each bundle of bundleDirs rendered inline (`opm render <bundle dir>`: image "", every
// manifest as an olm.bundle.object) so OLM installs without an unpack Job. extraEntries are appended to the
// channel.
func newCatalog(dir string, bundleDirs []string, extraEntries ...map[string]any) {
	GinkgoHelper()
	pkgDir := filepath.Join(dir, packageName)
	Expect(os.MkdirAll(filepath.Join(pkgDir, "channels"), 0o755)).To(Succeed())
	Expect(os.MkdirAll(filepath.Join(pkgDir, "bundles"), 0o755)).To(Succeed())
	committed := filepath.Join(repoRoot, "catalog", packageName)
	copyFile(filepath.Join(committed, "package.yaml"), filepath.Join(pkgDir, "package.yaml"))

	channel := map[string]any{}
	b, err := os.ReadFile(filepath.Join(committed, "channels", channelName+".yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(b, &channel)).To(Succeed())
	entries, _ := channel["entries"].([]any)
	for _, e := range extraEntries {
		entries = append(entries, e)
	}
	channel["entries"] = entries
	b, err = yaml.Marshal(channel)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(pkgDir, "channels", channelName+".yaml"), b, 0o644)).To(Succeed())

	for i, bd := range bundleDirs {
		out := run(opmBin, "render", bd, "-o", "yaml")
		Expect(string(out)).To(ContainSubstring("olm.bundle.object"), "opm render %s did not inline the manifests", bd)
		Expect(os.WriteFile(filepath.Join(pkgDir, "bundles", fmt.Sprintf("bundle-%d.yaml", i)), out, 0o644)).To(Succeed())
	}
	run(opmBin, "validate", dir)
}

// newBundleVersion copies bundle/ to dir with the CSV renamed to platform-operator.v<version>: a newer
// build of the same operator, as `make bundle VERSION=<version>` would make it.
func newBundleVersion(dir, version string) {
	GinkgoHelper()
	src := filepath.Join(repoRoot, "bundle")
	Expect(filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		copyFile(path, filepath.Join(dir, rel))
		return nil
	})).To(Succeed())

	path := filepath.Join(dir, "manifests", csvFile)
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	csv := map[string]any{}
	Expect(yaml.Unmarshal(b, &csv)).To(Succeed())
	csv["metadata"].(map[string]any)["name"] = packageName + ".v" + version
	csv["spec"].(map[string]any)["version"] = version
	b, err = yaml.Marshal(csv)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(path, b, 0o644)).To(Succeed())
}

func copyFile(from, to string) {
	GinkgoHelper()
	b, err := os.ReadFile(from)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(to, b, 0o644)).To(Succeed())
}

// opmServer is `opm serve` of one catalog directory on a fixed port.
type opmServer struct {
	port      int
	pprofPort int
	proc      *proc
}

// serve builds opm's cache of catalogDir and serves it. opm listens on every interface (it takes only a
// port); the CatalogSource reaches it on 127.0.0.1. Its startup profiler is bound to 127.0.0.1.
func (o *opmServer) serve(catalogDir string) {
	GinkgoHelper()
	cache := catalogDir + ".cache"
	run(opmBin, "serve", catalogDir, "--cache-dir", cache, "--cache-only", "--termination-log", os.DevNull)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(o.port))
	o.proc = startProc("opm", opmBin, []string{
		"serve", catalogDir, "--cache-dir", cache, "--cache-enforce-integrity",
		"--port", strconv.Itoa(o.port),
		"--pprof-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.pprofPort)),
		"--termination-log", filepath.Join(workDir, "opm-termination.log"),
	}, os.Environ(), addr)
	Eventually(func() error {
		if done, err := o.proc.exited(); done {
			return StopTrying(fmt.Sprintf("opm serve exited: %v\n%s", err, o.proc.tail(20)))
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}).WithTimeout(60*time.Second).Should(Succeed(), "opm serve on %s", addr)
}

func (o *opmServer) stop() {
	GinkgoHelper()
	Expect(o.proc.stop()).To(Succeed())
	Expect(o.proc.checkGone()).To(Succeed())
}
