package render_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/render/rendertest"
)

// closedPort is a port of 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// remoteServer serves a ConfigMap at /remote.yaml and counts the requests it gets.
func remoteServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: remote}\ndata: {a: '1'}\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// withOverlay is the kustomization fixture with its overlay's kustomization replaced.
func withOverlay(kustomization string, extra rendertest.Files) rendertest.Files {
	files := rendertest.Kustomization()
	files["kustomize/overlay/kustomization.yaml"] = kustomization
	for k, v := range extra {
		files[k] = v
	}
	return files
}

func TestKustomizeRemote(t *testing.T) {
	srv, hits := remoteServer(t)
	closed := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	const file = "kustomize/overlay/kustomization.yaml"
	tests := []struct {
		name  string
		files rendertest.Files
		// refused are the entries of the refusal; none for a build that must succeed.
		refused []string
	}{
		{name: "local bases and files build", files: withOverlay("resources:\n- ../base\n- extra.yaml\n", nil)},
		{name: "a builtin generator config of local files builds", files: withOverlay(
			"resources:\n- ../base\ngenerators:\n- gen.yaml\n", rendertest.Files{
				"kustomize/overlay/gen.yaml": "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: gen}\nfiles: [data.txt]\n",
				"kustomize/overlay/data.txt": "x\n",
			})},
		{name: "remote file over HTTP", files: withOverlay("resources:\n- ../base\n- "+srv.URL+"/remote.yaml\n", nil),
			refused: []string{file + `: resources ("` + srv.URL + `/remote.yaml" is remote: the operator fetches nothing a repository names; its administrator may allow remote bases (--catalyst-allow-remote-bases))`}},
		{name: "git bases", files: withOverlay("resources:\n- git::http://"+closed+"/org/repo.git//deploy?ref=v1\n- github.com/org/repo/deploy?ref=v1\nbases:\n- git@github.com:org/repo.git\ncomponents:\n- ssh://"+closed+"/org/repo.git\n", nil),
			refused: []string{
				file + `: components ("ssh://` + closed + `/org/repo.git" is remote: the operator fetches nothing a repository names; its administrator may allow remote bases (--catalyst-allow-remote-bases))`,
				file + `: resources ("git::http://` + closed + `/org/repo.git//deploy?ref=v1" is remote: the operator fetches nothing a repository names; its administrator may allow remote bases (--catalyst-allow-remote-bases))`,
				file + `: resources ("git@github.com:org/repo.git" is remote: the operator fetches nothing a repository names; its administrator may allow remote bases (--catalyst-allow-remote-bases))`,
				file + `: resources ("github.com/org/repo/deploy?ref=v1" is remote: the operator fetches nothing a repository names; its administrator may allow remote bases (--catalyst-allow-remote-bases))`,
			}},
		{name: "remote base in a local base", files: withOverlay("resources:\n- ../base\n", rendertest.Files{
			"kustomize/base/kustomization.yaml": "resources:\n- deployment.yaml\n- https://" + closed + "/x.yaml\n"}),
			refused: []string{`kustomize/base/kustomization.yaml: resources ("https://` + closed + `/x.yaml" is remote: the operator fetches nothing a repository names; its administrator may allow remote bases (--catalyst-allow-remote-bases))`}},
		{name: "remote patch, openapi and generator file", files: withOverlay("resources:\n- ../base\npatches:\n- path: "+srv.URL+"/p.yaml\nopenapi:\n  path: "+srv.URL+"/schema.json\nconfigMapGenerator:\n- name: c\n  files: [key="+srv.URL+"/f]\n", nil),
			refused: []string{
				file + `: configMapGenerator.files ("` + srv.URL + `/f" is remote: the operator fetches nothing a repository names)`,
				file + `: openapi.path ("` + srv.URL + `/schema.json" is remote: the operator fetches nothing a repository names)`,
				file + `: patches ("` + srv.URL + `/p.yaml" is remote: the operator fetches nothing a repository names)`,
			}},
		{name: "transformer config naming a remote patch", files: withOverlay("resources:\n- ../base\ntransformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: p}\n  path: "+srv.URL+"/p.yaml\n", nil),
			refused: []string{file + `: transformers path ("` + srv.URL + `/p.yaml" is remote: the operator fetches nothing a repository names)`}},
		{name: "entries outside the repository", files: withOverlay("resources:\n- ../base\ntransformers:\n- ../../../etc/t.yaml\nopenapi:\n  path: /schema.json\n", nil),
			refused: []string{
				file + `: openapi.path ("/schema.json" is an absolute path; name files relative to the kustomization)`,
				file + `: transformers ("../../../etc/t.yaml" leads outside the repository)`,
			}},
		{name: "Helm inflation", files: withOverlay("resources:\n- ../base\nhelmCharts:\n- name: web\n  repo: http://"+closed+"/charts\ngenerators:\n- helm.yaml\n", rendertest.Files{
			"kustomize/overlay/helm.yaml": "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata: {name: h}\nchartName: web\n"}),
			refused: []string{
				file + `: generators (HelmChartInflationGenerator would run helm; use the Project's deployment type helm)`,
				file + `: helmCharts (kustomize would run helm; use the Project's deployment type helm)`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, tt.files)
			in := input
			in.Path = "kustomize/overlay"
			before := hits.Load()
			objs, err := render.Kustomize(dir, in)
			if hits.Load() != before {
				t.Errorf("the build sent %d requests", hits.Load()-before)
			}
			if len(tt.refused) == 0 {
				if err != nil {
					t.Fatalf("build: %v", err)
				}
				if len(objs) == 0 {
					t.Error("no objects")
				}
				return
			}
			var refused *render.RemoteRefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("error = %v, want the refusal", err)
			}
			if !slices.Equal(refused.Entries, tt.refused) {
				t.Errorf("refused =\n  %s\nwant\n  %s", strings.Join(refused.Entries, "\n  "), strings.Join(tt.refused, "\n  "))
			}
			if strings.Contains(err.Error(), "connection refused") {
				t.Errorf("error = %v: a connection was tried", err)
			}
		})
	}
}

func TestKustomizeAllowRemoteBases(t *testing.T) {
	srv, hits := remoteServer(t)
	in := input
	in.Path, in.AllowRemoteBases = "kustomize/overlay", true

	// A remote file in resources is fetched and built.
	dir := write(t, withOverlay("resources:\n- ../base\n- "+srv.URL+"/remote.yaml\n", nil))
	objs, err := render.Kustomize(dir, in)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if hits.Load() != 1 {
		t.Errorf("the server got %d requests, want 1", hits.Load())
	}
	names, _ := summary(t, objs)
	if !slices.Contains(names, "ConfigMap/remote") {
		t.Errorf("objects %v lack the remote ConfigMap", names)
	}

	// A git base is tried (git fails on the closed port), not refused.
	dir = write(t, withOverlay(fmt.Sprintf("resources:\n- git::http://127.0.0.1:%d/org/repo.git\n", closedPort(t)), nil))
	_, err = render.Kustomize(dir, in)
	var refused *render.RemoteRefusedError
	if err == nil || errors.As(err, &refused) {
		t.Errorf("error = %v, want git's failure, not the refusal", err)
	}

	// Remote entries other than resources, bases and components stay refused.
	dir = write(t, withOverlay("resources:\n- ../base\npatches:\n- path: "+srv.URL+"/p.yaml\n", nil))
	if _, err := render.Kustomize(dir, in); !errors.As(err, &refused) {
		t.Errorf("error = %v, want the remote patch refused", err)
	}
}
