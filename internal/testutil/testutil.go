// Package testutil holds what several test packages need alike.
package testutil

import (
	"fmt"
	"os"
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

// RunThenStop is a TestMain for a package whose tests start a server once, on first use, into *started:
// it runs the tests, stops the server if one was started (a failure to stop is reported, not fatal: the
// tests' result stands), and exits with the tests' code.
func RunThenStop[T any, S interface {
	*T
	Stop() error
}](m *testing.M, started *S) {
	code := m.Run()
	if *started != nil {
		if err := (*started).Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop the API server: %v\n", err)
		}
	}
	os.Exit(code)
}
