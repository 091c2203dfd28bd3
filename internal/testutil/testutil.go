// Package testutil holds what several test packages need alike.
package testutil

import "testing"

// RepoRoot is the root module's directory (FindRepoRoot from the working directory, which
// go test sets to the package's); it fails the test when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}
