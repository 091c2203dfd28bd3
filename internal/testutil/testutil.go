// Package testutil holds what several test packages need alike.
package testutil

import (
	"strings"
	"testing"
)

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

// WantError fails t unless err is what a table test's row wants: no error when want is empty, else an
// error whose message contains want. It returns whether an error was wanted, so that the row stops there:
//
//	if testutil.WantError(t, err, tt.wantErr) {
//		return
//	}
func WantError(t testing.TB, err error, want string) (wanted bool) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	return true
}
