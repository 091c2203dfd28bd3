package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

const (
	// ModulePath is the project's Go module; testutil.FindRepoRoot looks for the go.mod that declares it.
	ModulePath = testutil.ModulePath
	// KubernetesVersion is the version of the control-plane binaries the Makefile builds into
	// bin/k8s/<KubernetesVersion>.
	KubernetesVersion = "1.34.2"
	// AssetsEnv names the directory holding etcd and kube-apiserver, as envtest and kubebuilder call it.
	AssetsEnv = "KUBEBUILDER_ASSETS"
)

// DefaultAssetsDirectory is where the Makefile puts the control-plane binaries.
func DefaultAssetsDirectory(repoRoot string) string {
	return filepath.Join(repoRoot, "bin", "k8s", KubernetesVersion)
}

// resolveAssets picks the binary directory: the option, else $KUBEBUILDER_ASSETS, else the Makefile's
// directory. It checks the binaries the control plane needs so a missing build fails with a hint
// instead of envtest retrying a missing executable five times.
func resolveAssets(option, env, repoRoot string) (string, error) {
	dir := option
	if dir == "" {
		dir = env
	}
	if dir == "" {
		dir = DefaultAssetsDirectory(repoRoot)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	var missing []string
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return dir, fmt.Errorf("%s has no executable %s: run `make controlplane` (it builds them into "+
			"bin/k8s/%s) or point %s at a directory that has them",
			dir, strings.Join(missing, " or "), KubernetesVersion, AssetsEnv)
	}
	return dir, nil
}

// existingDirs returns an error naming every directory that does not exist.
func existingDirs(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("CRD directory %s does not exist", d))
		}
	}
	return errors.Join(errs...)
}
