package testutil

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// ModulePath is the project's Go module; FindRepoRoot looks for the go.mod that declares it.
const ModulePath = "github.com/platform-operator/platform-operator"

// FindRepoRoot walks up from dir to the directory whose go.mod declares ModulePath. Tool modules
// nested in the repository (hack/tools/...) have go.mod files of their own, so the first go.mod is not
// enough.
func FindRepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if modulePath(filepath.Join(d, "go.mod")) == ModulePath {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s in %s or any parent directory", ModulePath, dir)
		}
	}
}

// modulePath returns the module path a go.mod declares, or "" when the file is missing or has none.
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// FreePorts returns n distinct ports free on 127.0.0.1, held open together so none repeats. As with
// envtest's own port picking, another process can take one before the server binds it.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
