package openshift

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	buildv1 "github.com/openshift/api/build/v1"
	imagev1 "github.com/openshift/api/image/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// TestSourceFilesDecodeStrictly decodes every YAML file under config/openshift that is not a kustomization:
// a misspelt or misplaced field fails here before kustomize or the API server would drop or refuse it.
func TestSourceFilesDecodeStrictly(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "config", "openshift")
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, f)
		m := decodeManifests(t, rel, data)
		n += len(m.objects())
	}
	if n == 0 {
		t.Fatal("no objects found under config/openshift")
	}
}

// TestKustomizationsRender renders every entry point for the default project and another one, and checks
// each object the way the API server validates it.
func TestKustomizationsRender(t *testing.T) {
	for _, r := range []rendering{renderDefault(t), renderFor(t, otherNamespace)} {
		t.Run(r.namespace, func(t *testing.T) {
			for _, k := range kustomizations {
				m := r.out[k]
				if len(m.objects()) == 0 {
					t.Errorf("config/openshift/%s renders nothing", k)
				}
				for _, bc := range m.BuildConfigs {
					for _, err := range validateBuildConfig(bc) {
						t.Errorf("%s: BuildConfig %s: %v", k, bc.Name, err)
					}
				}
				for _, is := range m.ImageStreams {
					for _, err := range validateImageStream(is) {
						t.Errorf("%s: ImageStream %s: %v", k, is.Name, err)
					}
				}
				for _, o := range m.objects() {
					if errs := validation.IsDNS1123Subdomain(o.Meta.Name); len(errs) > 0 {
						t.Errorf("%s: %s name %q: %s", k, o.Kind, o.Meta.Name, strings.Join(errs, "; "))
					}
					if o.Meta.Namespace != r.namespace {
						t.Errorf("%s: %s %s is in namespace %q, want %q from params.env", k, o.Kind, o.Meta.Name, o.Meta.Namespace, r.namespace)
					}
				}
			}
		})
	}
}

// TestKustomizationsAgree checks that config/openshift is build/ and olm/ together, and that git/ is build/
// with only the operator's and the fleet agent's sources switched to Git.
func TestKustomizationsAgree(t *testing.T) {
	r := renderDefault(t)

	t.Run("config/openshift is build plus olm", func(t *testing.T) {
		all := docSet(t, r.raw["."])
		parts := docSet(t, append(append([]byte{}, r.raw["build"]...), append([]byte("\n---\n"), r.raw["olm"]...)...))
		for doc := range all {
			if !parts[doc] {
				t.Errorf("config/openshift renders an object build/ and olm/ do not:\n%s", doc)
			}
		}
		for doc := range parts {
			if !all[doc] {
				t.Errorf("build/ or olm/ renders an object config/openshift does not (add its file to config/openshift/kustomization.yaml):\n%s", doc)
			}
		}
	})

	// The images built from the repository as it is; the bundle and catalog are rendered per project.
	gitBuilds := map[string]bool{operatorBuild: true, fleetAgentBuild: true}
	t.Run("git differs from build only in the operator's and agent's sources", func(t *testing.T) {
		build, git := r.out["build"], r.out["git"]
		if len(build.ImageStreams) != len(git.ImageStreams) || len(build.BuildConfigs) != len(git.BuildConfigs) {
			t.Fatalf("git/ renders %d image streams and %d builds, build/ %d and %d",
				len(git.ImageStreams), len(git.BuildConfigs), len(build.ImageStreams), len(build.BuildConfigs))
		}
		for i := range build.ImageStreams {
			if !equality.Semantic.DeepEqual(build.ImageStreams[i], git.ImageStreams[i]) {
				t.Errorf("git/ changes ImageStream %s", build.ImageStreams[i].Name)
			}
		}
		for _, want := range build.BuildConfigs {
			got := git.buildConfig(want.Name)
			if got == nil {
				t.Errorf("git/ has no BuildConfig %s", want.Name)
				continue
			}
			if !gitBuilds[want.Name] {
				if !equality.Semantic.DeepEqual(want, got) {
					t.Errorf("git/ changes BuildConfig %s: only %s and %s have a Git variant", want.Name, operatorBuild, fleetAgentBuild)
				}
				continue
			}
			src := got.Spec.Source
			if src.Type != buildv1.BuildSourceGit || src.Git == nil || src.Binary != nil {
				t.Errorf("git/: %s source is %s (git %v, binary %v), want Git only", got.Name, src.Type, src.Git != nil, src.Binary != nil)
			} else {
				if src.Git.URI != r.params["gitURI"] || src.Git.Ref != r.params["gitRef"] {
					t.Errorf("git/: %s clones %s at %s, params.env says %s at %s", got.Name, src.Git.URI, src.Git.Ref, r.params["gitURI"], r.params["gitRef"])
				}
			}
			if len(got.Spec.Triggers) != 1 || got.Spec.Triggers[0].Type != buildv1.ConfigChangeBuildTriggerType {
				t.Errorf("git/: %s triggers %v, want only ConfigChange", got.Name, got.Spec.Triggers)
			}
			delete(gitBuilds, want.Name)
			rest := got.DeepCopy()
			rest.Spec.Source, rest.Spec.Triggers = want.Spec.Source, want.Spec.Triggers
			if !equality.Semantic.DeepEqual(want, rest) {
				t.Errorf("git/ changes more of %s than its source and triggers", got.Name)
			}
		}
		for name := range gitBuilds {
			t.Errorf("build/ has no BuildConfig %s to build from Git", name)
		}
	})
}

// docSet is the set of a YAML stream's documents, each re-serialised so key order and formatting do not count.
func docSet(t testing.TB, data []byte) map[string]bool {
	t.Helper()
	docs, err := splitDocuments(data)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, d := range docs {
		var v any
		if err := yaml.Unmarshal(d, &v); err != nil {
			t.Fatal(err)
		}
		out, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		set[string(out)] = true
	}
	return set
}

var (
	// imageTag is the tag grammar of the distribution reference spec.
	imageTag = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	// envVarName is what the API server accepts as an environment variable name.
	envVarName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
)

// validateBuildConfig applies the checks of openshift-apiserver's build validation
// (pkg/build/apis/build/validation) that concern what config/openshift sets, so a BuildConfig the API
// server would refuse fails here.
func validateBuildConfig(bc *buildv1.BuildConfig) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	spec := bc.Spec

	switch spec.RunPolicy {
	case buildv1.BuildRunPolicyParallel, buildv1.BuildRunPolicySerial, buildv1.BuildRunPolicySerialLatestOnly:
	default:
		add("spec.runPolicy %q: must be Parallel, Serial or SerialLatestOnly", spec.RunPolicy)
	}
	for name, limit := range map[string]*int32{"successfulBuildsHistoryLimit": spec.SuccessfulBuildsHistoryLimit, "failedBuildsHistoryLimit": spec.FailedBuildsHistoryLimit} {
		if limit != nil && *limit < 0 {
			add("spec.%s %d: must be non-negative", name, *limit)
		}
	}

	// Source: Git and Binary exclude each other, and a Docker build needs one input; type names the input.
	src := spec.Source
	if src.Git != nil && src.Binary != nil {
		add("spec.source: git and binary may not both be set")
	}
	if src.Git == nil && src.Binary == nil && src.Dockerfile == nil && len(src.Images) == 0 {
		add("spec.source: must provide a value for at least one source input (git, binary, dockerfile, images)")
	}
	switch {
	case src.Type == buildv1.BuildSourceBinary && src.Binary == nil,
		src.Type == buildv1.BuildSourceGit && src.Git == nil,
		src.Type != buildv1.BuildSourceBinary && src.Type != buildv1.BuildSourceGit:
		add("spec.source.type %q does not match the source set", src.Type)
	}
	if src.Git != nil && !strings.HasPrefix(src.Git.URI, "https://") {
		add("spec.source.git.uri %q: clone over https, so no source secret is needed for a public repository", src.Git.URI)
	}
	if src.ContextDir != "" {
		add("spec.source.contextDir %q: the Dockerfiles copy paths relative to the repository root", src.ContextDir)
	}

	// Strategy: exactly Docker, with a dockerfilePath inside the source.
	st := spec.Strategy
	if st.Type != buildv1.DockerBuildStrategyType || st.DockerStrategy == nil || st.SourceStrategy != nil || st.CustomStrategy != nil || st.JenkinsPipelineStrategy != nil {
		add("spec.strategy: want exactly the Docker strategy")
	} else {
		p := st.DockerStrategy.DockerfilePath
		clean := path.Clean(p)
		if p == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean != p {
			add("spec.strategy.dockerStrategy.dockerfilePath %q: must be a clean relative path within the source", p)
		}
		for _, e := range st.DockerStrategy.Env {
			if !envVarName.MatchString(e.Name) {
				add("spec.strategy.dockerStrategy.env %q: invalid name", e.Name)
			}
		}
	}

	// Output: an ImageStreamTag <stream>:<tag> in the BuildConfig's own namespace.
	to := spec.Output.To
	switch {
	case to == nil:
		add("spec.output.to: the build must push to an ImageStreamTag")
	case to.Kind != "ImageStreamTag":
		add("spec.output.to.kind %q: want ImageStreamTag", to.Kind)
	case to.Namespace != "":
		add("spec.output.to.namespace %q: push to the BuildConfig's own project", to.Namespace)
	default:
		stream, tag, ok := strings.Cut(to.Name, ":")
		if !ok || strings.Contains(tag, ":") {
			add("spec.output.to.name %q: must be <name>:<tag>", to.Name)
			break
		}
		for _, e := range validateImageStreamName(stream) {
			add("spec.output.to.name %q: %v", to.Name, e)
		}
		if !imageTag.MatchString(tag) {
			add("spec.output.to.name %q: invalid tag %q", to.Name, tag)
		}
	}

	for i, trg := range spec.Triggers {
		switch trg.Type {
		case buildv1.ConfigChangeBuildTriggerType:
		case buildv1.ImageChangeBuildTriggerType:
			if trg.ImageChange == nil || trg.ImageChange.From == nil || trg.ImageChange.From.Kind != "ImageStreamTag" {
				add("spec.triggers[%d]: an ImageChange trigger of a Docker build without strategy.from needs from: an ImageStreamTag", i)
			}
		default:
			add("spec.triggers[%d]: type %q is not used here (webhooks need secrets)", i, trg.Type)
		}
		if src.Binary != nil {
			add("spec.triggers[%d]: a Binary build started by a trigger has nothing uploaded and fails", i)
		}
	}

	// Requests must fit the limits, or the build pod is refused.
	for name, req := range spec.Resources.Requests {
		if lim, ok := spec.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
			add("spec.resources: request %s=%s above limit %s", name, req.String(), lim.String())
		}
	}
	if _, ok := spec.Resources.Limits[corev1.ResourceMemory]; !ok {
		add("spec.resources.limits.memory is unset: a project with a quota on memory refuses the build pod")
	}
	return errs
}

// validateImageStreamName follows openshift-apiserver's ValidateImageStreamName: a path segment name that
// also works as a repository name in the registry.
func validateImageStreamName(name string) []error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("image stream name %q: %s", name, strings.Join(msgs, "; ")))
	}
	if strings.ContainsAny(name, "/%") || name == "." || name == ".." {
		errs = append(errs, fmt.Errorf("image stream name %q: may not contain / or %% or be a dot segment", name))
	}
	return errs
}

func validateImageStream(is *imagev1.ImageStream) []error {
	errs := validateImageStreamName(is.Name)
	// The builds create the tags by pushing; a spec tag here would be an import from elsewhere.
	if len(is.Spec.Tags) > 0 {
		errs = append(errs, fmt.Errorf("spec.tags: the builds push the tags; none should be declared"))
	}
	if is.Spec.DockerImageRepository != "" {
		errs = append(errs, fmt.Errorf("spec.dockerImageRepository %q: the stream holds what the builds push", is.Spec.DockerImageRepository))
	}
	return errs
}

// TestValidatorRejects proves the BuildConfig checks above can fail: each case breaks one rule.
func TestValidatorRejects(t *testing.T) {
	base := renderDefault(t).out["build"].buildConfig(operatorBuild)
	if base == nil {
		t.Fatalf("no BuildConfig %s in config/openshift/build", operatorBuild)
	}
	if errs := validateBuildConfig(base); len(errs) > 0 {
		t.Fatalf("the committed %s does not validate: %v", operatorBuild, errs)
	}
	tests := []struct {
		name   string
		mutate func(*buildv1.BuildConfig)
	}{
		{"bad run policy", func(bc *buildv1.BuildConfig) { bc.Spec.RunPolicy = "Sometimes" }},
		{"git and binary", func(bc *buildv1.BuildConfig) {
			bc.Spec.Source.Git = &buildv1.GitBuildSource{URI: "https://example.com/x.git"}
		}},
		{"no source", func(bc *buildv1.BuildConfig) { bc.Spec.Source = buildv1.BuildSource{Type: buildv1.BuildSourceBinary} }},
		{"dockerfile outside the source", func(bc *buildv1.BuildConfig) { bc.Spec.Strategy.DockerStrategy.DockerfilePath = "../Dockerfile" }},
		{"output without tag", func(bc *buildv1.BuildConfig) { bc.Spec.Output.To.Name = "platform-operator" }},
		{"output to DockerImage", func(bc *buildv1.BuildConfig) { bc.Spec.Output.To.Kind = "DockerImage" }},
		{"trigger on a binary build", func(bc *buildv1.BuildConfig) {
			bc.Spec.Triggers = []buildv1.BuildTriggerPolicy{{Type: buildv1.ConfigChangeBuildTriggerType}}
		}},
		{"request above limit", func(bc *buildv1.BuildConfig) {
			bc.Spec.Resources.Requests[corev1.ResourceMemory] = bc.Spec.Resources.Limits[corev1.ResourceMemory].DeepCopy()
			q := bc.Spec.Resources.Requests[corev1.ResourceMemory]
			q.Add(q)
			bc.Spec.Resources.Requests[corev1.ResourceMemory] = q
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bc := base.DeepCopy()
			tt.mutate(bc)
			if errs := validateBuildConfig(bc); len(errs) == 0 {
				t.Error("validateBuildConfig accepted it")
			}
		})
	}
	if errs := validateImageStream(&imagev1.ImageStream{}); len(errs) == 0 {
		t.Error("validateImageStream accepted an image stream without a name")
	}
}
