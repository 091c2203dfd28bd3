// Package testutil holds what several test packages need alike.
package testutil

import (
	"testing"

	"github.com/platform-operator/platform-operator/internal/localcluster"
)

// RepoRoot is the root module's directory (localcluster.FindRepoRoot from the working directory, which
// go test sets to the package's); it fails the test when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := localcluster.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}
