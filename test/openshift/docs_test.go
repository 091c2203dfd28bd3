package openshift

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

const docFile = "docs/openshift.md"

// shellBlocks returns the fenced ```sh blocks of a Markdown document, with their indentation removed.
func shellBlocks(doc string) []string {
	var blocks []string
	var cur []string
	in, indent := false, ""
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case !in && trimmed == "```sh":
			in, indent, cur = true, line[:len(line)-len(trimmed)], nil
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, strings.TrimPrefix(line, indent))
		}
	}
	return blocks
}

// heredoc is a here-document of a shell block: the YAML a step applies.
type heredoc struct {
	quoted bool // <<'EOF': no expansion
	body   string
}

var heredocStart = regexp.MustCompile(`<<(')?EOF(')?\s*$`)

func heredocs(block string) []heredoc {
	var docs []heredoc
	lines := strings.Split(block, "\n")
	for i := 0; i < len(lines); i++ {
		m := heredocStart.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "EOF"; i++ {
			body = append(body, lines[i])
		}
		docs = append(docs, heredoc{quoted: m[1] == "'", body: strings.Join(body, "\n")})
	}
	return docs
}

// commands are the shell lines of the blocks outside here-documents, comments stripped.
func commands(blocks []string) []string {
	var out []string
	for _, b := range blocks {
		inDoc := false
		for _, line := range strings.Split(b, "\n") {
			switch {
			case inDoc:
				inDoc = line != "EOF"
				continue
			case heredocStart.MatchString(line):
				inDoc = true
			}
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	return out
}

// TestDocsMatchTheRepository checks docs/openshift.md against what it describes: the kustomizations it
// applies exist, the Makefile targets it runs exist and are documented in `make help`, each build is started
// from the directory that holds what its Dockerfile copies (the render targets' output for the default
// project), and the pullspecs and tags it shows are the ones params.env holds.
func TestDocsMatchTheRepository(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, docFile))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	r := renderDefault(t)
	cmds := commands(shellBlocks(doc))
	if len(cmds) == 0 {
		t.Fatalf("%s has no shell commands", docFile)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}

	fromDir := map[string]string{
		operatorBuild:   ".",
		bundleBuild:     "bin/openshift/" + r.namespace + "/bundle",
		catalogBuild:    "bin/openshift/" + r.namespace + "/catalog",
		fleetAgentBuild: ".",
	}
	started := map[string]bool{}
	for _, c := range cmds {
		words := strings.Fields(c)
		switch {
		case len(words) >= 4 && words[0] == "oc" && (words[1] == "apply" || words[1] == "delete") && words[2] == "-k":
			if _, err := os.Stat(filepath.Join(root, words[3], "kustomization.yaml")); err != nil {
				t.Errorf("%s: %q: no kustomization at %s", docFile, c, words[3])
			}
		case len(words) >= 2 && words[0] == "make":
			for _, w := range words[1:] {
				if strings.Contains(w, "=") {
					v, _, _ := strings.Cut(w, "=")
					if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(v) + ` \?=`).Match(makefile) {
						t.Errorf("%s: %q sets %s, which the Makefile does not define", docFile, c, v)
					}
					continue
				}
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(w) + `:.*## `).Match(makefile) {
					t.Errorf("%s: %q runs target %s, which the Makefile lacks (or does not document for make help)", docFile, c, w)
				}
			}
		case len(words) >= 3 && words[0] == "oc" && words[1] == "start-build":
			bc := words[2]
			want, known := fromDir[bc]
			if !known {
				t.Errorf("%s: %q starts %s, which is not one of config/openshift's BuildConfigs", docFile, c, bc)
				continue
			}
			for _, w := range words[3:] {
				if dir, ok := strings.CutPrefix(w, "--from-dir="); ok {
					started[bc] = true
					if dir != want && !strings.Contains(dir, "team-irc") {
						t.Errorf("%s: %q uploads %s, the build context for %s is %s", docFile, c, dir, bc, want)
					}
				}
			}
		}
	}
	for bc := range fromDir {
		if !started[bc] {
			t.Errorf("%s never starts %s with --from-dir", docFile, bc)
		}
	}

	for _, k := range []string{"operatorImage", "bundleImage", "catalogImage", "fleetAgentImage"} {
		if !strings.Contains(doc, "\n"+r.params[k]+"\n") {
			t.Errorf("%s does not show %s %s on a line of its own (the pullspecs block)", docFile, k, r.params[k])
		}
		_, tag, _ := strings.Cut(r.params[k][strings.LastIndex(r.params[k], "/")+1:], ":")
		for _, m := range regexp.MustCompile(`istag [a-z-]+:(\S+)`).FindAllStringSubmatch(doc, -1) {
			if m[1] != tag {
				t.Errorf("%s shows tag %s, the builds push %s", docFile, m[1], tag)
			}
		}
	}
	if !strings.Contains(doc, "`"+r.namespace+"`") {
		t.Errorf("%s does not name the default project %s", docFile, r.namespace)
	}
	if !strings.Contains(doc, "channel `"+r.params["channel"]+"`") {
		t.Errorf("%s does not name the Subscription's channel %s", docFile, r.params["channel"])
	}
}

// TestDocsYAMLIsAccepted decodes the YAML the steps apply strictly into the operator's and cert-manager's
// types and creates it on an API server serving their CRDs, so the ErgoNetwork of step 9 passes the CRD's
// validation rules as written.
func TestDocsYAMLIsAccepted(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, docFile))
	if err != nil {
		t.Fatal(err)
	}
	// What step 9 computes: a host under the cluster's apps domain.
	vars := map[string]string{"HOST": "irc-platform-operator-system.apps.cluster.example.com"}
	var kinds []string
	c := apiServer(t)
	for _, b := range shellBlocks(string(data)) {
		for _, h := range heredocs(b) {
			body := h.body
			if !h.quoted {
				body = os.Expand(body, func(k string) string {
					v, ok := vars[k]
					if !ok {
						t.Errorf("%s: a here-document uses $%s, which this test does not know", docFile, k)
					}
					return v
				})
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(body), &tm); err != nil {
				t.Fatalf("%s: here-document: %v\n%s", docFile, err, body)
			}
			var obj any
			switch tm.GroupVersionKind() {
			case certmanagerv1.SchemeGroupVersion.WithKind("Issuer"):
				obj = &certmanagerv1.Issuer{}
			case ircv1.GroupVersion.WithKind("ErgoNetwork"):
				obj = &ircv1.ErgoNetwork{}
			default:
				t.Errorf("%s: here-document of unexpected kind %s %s", docFile, tm.APIVersion, tm.Kind)
				continue
			}
			if err := yaml.UnmarshalStrict([]byte(body), obj); err != nil {
				t.Errorf("%s: %s: %v", docFile, tm.Kind, err)
				continue
			}
			if _, err := createDocument(c, "docs-openshift", []byte(body)); err != nil {
				t.Errorf("%s: %v", docFile, err)
			}
			kinds = append(kinds, tm.Kind)
		}
	}
	if !slices.Contains(kinds, "ErgoNetwork") || !slices.Contains(kinds, "Issuer") {
		t.Errorf("%s applies %v; want the Issuer and the ErgoNetwork", docFile, kinds)
	}
}
