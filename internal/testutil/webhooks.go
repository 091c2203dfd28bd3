package testutil

import (
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// WebhookManifests builds config/webhook of the repository at root the way config/default and
// config/manifests include it (its patches, such as the matchConditions, applied) into webhook.yaml in dir,
// and returns that file's path: what envtest installs is then what ships, not controller-gen's output alone.
func WebhookManifests(root, dir string) (string, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "webhook"))
	if err != nil {
		return "", err
	}
	y, err := m.AsYaml()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "webhook.yaml")
	return path, os.WriteFile(path, y, 0o600)
}
