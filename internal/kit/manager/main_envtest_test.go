package manager_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// sharedEnv is the package's one API server (envtest), started once for every test that needs one.
var sharedEnv *testenv.Env

func TestMain(m *testing.M) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedEnv = env
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
	}
	os.Exit(code)
}
