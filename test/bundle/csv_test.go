package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	imageBase      = "ghcr.io/platform-operator/" + packageName
	serviceAccount = packageName + "-controller-manager"
)

// operatorContainer is the manager container of the CSV's only Deployment.
func operatorContainer(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) corev1.Container {
	t.Helper()
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 || len(deps[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one Deployment with one container, got %d Deployments", len(deps))
	}
	return deps[0].Spec.Template.Spec.Containers[0]
}

func envVar(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func TestCSVIdentity(t *testing.T) {
	csv := loadCSV(t)
	v := csv.Spec.Version.Version
	if csv.Name != fmt.Sprintf("%s.v%s", packageName, v) {
		t.Errorf("CSV name %q, want %s.v%s", csv.Name, packageName, v)
	}
	img := fmt.Sprintf("%s:v%s", imageBase, v)
	if got := operatorContainer(t, csv).Image; got != img {
		t.Errorf("operator image %q, want %q (IMG for VERSION %s)", got, img, v)
	}
	if got := csv.Annotations["containerImage"]; got != img {
		t.Errorf("containerImage annotation %q, want the operator image %q", got, img)
	}
	if csv.Spec.Maturity != "alpha" {
		t.Errorf("maturity %q: the API is v1alpha1, so the operator is alpha", csv.Spec.Maturity)
	}
	// Installs and upgrades seamlessly (spec changes roll ergo, the claim grows in place); Full Lifecycle:
	// backups, restores into new objects and restore drills of every kind users entrust data to
	// (docs/backup.md); Deep Insights: metrics, alerts and dashboards (TestBundleMonitoring). OLM's levels
	// are cumulative: Deep Insights is claimed because every level below it is met (docs/olm.md).
	if got := csv.Annotations["capabilities"]; got != "Deep Insights" {
		t.Errorf("capabilities %q, want Deep Insights (the highest level whose criteria and all below it are met)", got)
	}
	for _, want := range []string{"Restore into a new object", "Restore drills", "Full Lifecycle"} {
		if !strings.Contains(csv.Spec.Description, want) {
			t.Errorf("the CSV description does not say %q: the capability level it claims rests on it", want)
		}
	}
	minKube, err := semver.Parse(csv.Spec.MinKubeVersion)
	if err != nil {
		t.Fatalf("minKubeVersion %q: %v", csv.Spec.MinKubeVersion, err)
	}
	// The CRD's validation rules use CEL's quantity library (Kubernetes 1.28) and the 1.29 CEL
	// environment; the control plane of make test is 1.34.
	if minKube.LT(semver.MustParse("1.29.0")) || minKube.GT(semver.MustParse(k8sVersion+".0")) {
		t.Errorf("minKubeVersion %s: want at least 1.29.0 (CEL quantity rules) and at most %s.0 (what is tested)", minKube, k8sVersion)
	}
	if created := csv.Annotations["createdAt"]; created == "" {
		t.Error("no createdAt annotation")
	}
}

// TestCSVInstallModes: every install mode is supported because the operator honours WATCH_NAMESPACE,
// which the Deployment takes from the OperatorGroup's target namespaces.
func TestCSVInstallModes(t *testing.T) {
	csv := loadCSV(t)
	want := []operatorsv1alpha1.InstallModeType{
		operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace,
		operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces,
	}
	var got []operatorsv1alpha1.InstallModeType
	for _, m := range csv.Spec.InstallModes {
		if m.Supported {
			got = append(got, m.Type)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("supported install modes %q, want %q", got, want)
	}
	e, ok := envVar(operatorContainer(t, csv), "WATCH_NAMESPACE")
	if !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['olm.targetNamespaces']" {
		t.Errorf("WATCH_NAMESPACE is %+v, want it from the pod annotation olm.targetNamespaces", e)
	}
}

// TestCSVFeatureAnnotations checks the features.operators.openshift.io annotations OpenShift's catalog
// filters on: all present, and "disconnected" true only if every image is pinned by digest (the bundle
// names images by tag, so a mirror cannot promise to hold what it names).
func TestCSVFeatureAnnotations(t *testing.T) {
	csv := loadCSV(t)
	features := []string{"disconnected", "fips-compliant", "proxy-aware", "tls-profiles", "token-auth-aws",
		"token-auth-azure", "token-auth-gcp", "cnf", "cni", "csi"}
	for _, f := range features {
		v, ok := csv.Annotations["features.operators.openshift.io/"+f]
		if !ok || (v != "true" && v != "false") {
			t.Errorf("features.operators.openshift.io/%s = %q, want \"true\" or \"false\"", f, v)
		}
	}
	images := []string{operatorContainer(t, csv).Image}
	for _, ri := range csv.Spec.RelatedImages {
		images = append(images, ri.Image)
	}
	pinned := !slices.ContainsFunc(images, func(img string) bool { return !strings.Contains(img, "@sha256:") })
	if got := csv.Annotations["features.operators.openshift.io/disconnected"]; got != fmt.Sprint(pinned) {
		t.Errorf("disconnected = %s, but images %q are pinned by digest: %t", got, images, pinned)
	}
	for _, l := range []string{"operatorframework.io/arch.amd64", "operatorframework.io/arch.arm64", "operatorframework.io/os.linux"} {
		if csv.Labels[l] != "supported" {
			t.Errorf("label %s = %q, want supported", l, csv.Labels[l])
		}
	}
}

// TestCSVPermissions: the manager's rules (config/rbac/role.yaml, from the RBAC markers) and leader
// election's are namespaced permissions, which OLM grants in the target namespaces; only the metrics
// endpoint's TokenReview and SubjectAccessReview are cluster permissions.
func TestCSVPermissions(t *testing.T) {
	csv := loadCSV(t)
	spec := csv.Spec.InstallStrategy.StrategySpec
	rulesOf := func(perms []operatorsv1alpha1.StrategyDeploymentPermissions) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, p := range perms {
			if p.ServiceAccountName != serviceAccount {
				t.Errorf("permissions for service account %q, want only %q", p.ServiceAccountName, serviceAccount)
			}
			out = append(out, p.Rules...)
		}
		return out
	}
	perms, clusterPerms := rulesOf(spec.Permissions), rulesOf(spec.ClusterPermissions)

	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(readFile(t, "config/rbac/role.yaml"), role); err != nil {
		t.Fatal(err)
	}
	leader := &rbacv1.Role{}
	if err := yaml.UnmarshalStrict(readFile(t, "config/rbac/leader_election_role.yaml"), leader); err != nil {
		t.Fatal(err)
	}
	for _, want := range append(slices.Clone(role.Rules), leader.Rules...) {
		if !slices.ContainsFunc(perms, func(r rbacv1.PolicyRule) bool { return reflect.DeepEqual(r, want) }) {
			t.Errorf("permissions lack %s", ruleString(want))
		}
	}
	for _, r := range clusterPerms {
		for _, res := range r.Resources {
			if res != "tokenreviews" && res != "subjectaccessreviews" {
				t.Errorf("cluster permission %s: only the metrics endpoint's reviews need cluster scope", ruleString(r))
			}
		}
	}
	if !slices.Contains(operatorContainer(t, csv).Args, "--leader-elect") {
		t.Error("the manager runs without --leader-elect")
	}
}

func ruleString(r rbacv1.PolicyRule) string {
	return fmt.Sprintf("%q %q %q", r.APIGroups, r.Resources, r.Verbs)
}

// sampleKey identifies a sample: apiVersion, kind, namespace and name.
func sampleKey(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	return fmt.Sprint(obj["apiVersion"], "/", obj["kind"], "/", meta["namespace"], "/", meta["name"])
}

// TestCSVSamples: alm-examples are config/samples' kustomization resources, as they are on disk.
func TestCSVSamples(t *testing.T) {
	csv := loadCSV(t)
	var got []map[string]any
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &got); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(readFile(t, "config/samples/kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	for _, res := range k.Resources {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(readFile(t, path.Join("config/samples", res))), 4096)
		for {
			obj := map[string]any{}
			if err := dec.Decode(&obj); err != nil {
				break
			}
			if len(obj) > 0 {
				want = append(want, obj)
			}
		}
	}
	// operator-sdk orders alm-examples its own way: compare them as a set.
	byIdentity := func(a, b map[string]any) int { return strings.Compare(sampleKey(a), sampleKey(b)) }
	slices.SortFunc(got, byIdentity)
	slices.SortFunc(want, byIdentity)
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("alm-examples\n%v\nare not config/samples\n%v\n(run make bundle)", got, want)
	}
}

// TestCSVIcon: the icon is the project's own SVG, config/manifests/bases/icon.svg.
func TestCSVIcon(t *testing.T) {
	csv := loadCSV(t)
	svg := readFile(t, "config/manifests/bases/icon.svg")
	if len(csv.Spec.Icon) != 1 || csv.Spec.Icon[0].MediaType != "image/svg+xml" ||
		csv.Spec.Icon[0].Data != base64.StdEncoding.EncodeToString(svg) {
		t.Error("the CSV's icon is not config/manifests/bases/icon.svg as image/svg+xml")
	}
	var root struct {
		XMLName xml.Name
		ViewBox string `xml:"viewBox,attr"`
	}
	if err := xml.Unmarshal(svg, &root); err != nil || root.XMLName.Local != "svg" || root.ViewBox == "" {
		t.Errorf("icon.svg is not an SVG document with a viewBox: %v", err)
	}
}

// TestBundleCRDs: the bundle ships the CRDs controller-gen generates, unchanged, and each is owned by
// the CSV with a description.
func TestBundleCRDs(t *testing.T) {
	csv := loadCSV(t)
	b := loadBundle(t)
	if len(b.V1CRDs) != len(csv.Spec.CustomResourceDefinitions.Owned) {
		t.Errorf("%d CRDs in the bundle, %d owned by the CSV", len(b.V1CRDs), len(csv.Spec.CustomResourceDefinitions.Owned))
	}
	for _, crd := range b.V1CRDs {
		want := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(readFile(t, "config/crd/bases/"+crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"), want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(crd.Spec, want.Spec) {
			t.Errorf("CRD %s in bundle/ differs from config/crd/bases (run make manifests bundle)", crd.Name)
		}
		if !slices.ContainsFunc(csv.Spec.CustomResourceDefinitions.Owned, func(d operatorsv1alpha1.CRDDescription) bool {
			return d.Name == crd.Name && d.Description != "" && d.DisplayName != ""
		}) {
			t.Errorf("CRD %s is not owned by the CSV with a display name and a description", crd.Name)
		}
	}
}

// TestBundleChannels: the bundle's channels follow OLM's naming convention (candidate, fast, stable with
// the major version) and its default channel is one of them.
func TestBundleChannels(t *testing.T) {
	a := bundleAnnotations(t)
	if a["operators.operatorframework.io.bundle.package.v1"] != packageName {
		t.Errorf("package %q, want %s", a["operators.operatorframework.io.bundle.package.v1"], packageName)
	}
	channels := strings.Split(a["operators.operatorframework.io.bundle.channels.v1"], ",")
	major := loadCSV(t).Spec.Version.Major
	for _, ch := range channels {
		ok := false
		for _, prefix := range []string{"candidate", "fast", "stable"} {
			ok = ok || ch == fmt.Sprintf("%s-v%d", prefix, major) || strings.HasPrefix(ch, fmt.Sprintf("%s-v%d.", prefix, major))
		}
		if !ok {
			t.Errorf("channel %q: want candidate-, fast- or stable-v%d[.minor]", ch, major)
		}
	}
	if def := a["operators.operatorframework.io.bundle.channel.default.v1"]; !slices.Contains(channels, def) {
		t.Errorf("default channel %q is not one of %q", def, channels)
	}
}

// TestCSVDeploymentKeepsEveryField: operator-sdk v1.33 decodes manifests with Kubernetes 1.27 types, so a
// pod field newer than that would vanish from the CSV without a word (it did drop the CRD's
// x-kubernetes-validations fieldPath, which is why make bundle copies the CRDs from config/crd/bases).
// The CSV's pod template is config/manager's, with the names kustomize gives it.
func TestCSVDeploymentKeepsEveryField(t *testing.T) {
	csv := loadCSV(t)
	var want *appsv1.Deployment
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(readFile(t, "config/manager/manager.yaml")), 4096)
	for {
		raw := map[string]any{}
		if err := dec.Decode(&raw); err != nil {
			break
		}
		if raw["kind"] != "Deployment" {
			continue
		}
		data, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		want = &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict(data, want); err != nil {
			t.Fatal(err)
		}
	}
	if want == nil {
		t.Fatal("config/manager/manager.yaml has no Deployment")
	}
	got := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	spec := want.Spec.Template.Spec
	spec.ServiceAccountName = packageName + "-" + spec.ServiceAccountName
	// config/default's webhook patch adds the webhook server's port (its certificate volume is left out of
	// the CSV: OLM mounts its own, from the webhookdefinitions).
	patch := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(readFile(t, "config/default/manager_webhook_patch.yaml"), patch); err != nil {
		t.Fatal(err)
	}
	spec.Containers[0].Ports = append(slices.Clone(patch.Spec.Template.Spec.Containers[0].Ports), spec.Containers[0].Ports...)
	spec.Containers[0].Image = got.Containers[0].Image // TestCSVIdentity checks it
	if !reflect.DeepEqual(got, spec) {
		gotJSON, _ := json.MarshalIndent(got, "", " ")
		wantJSON, _ := json.MarshalIndent(spec, "", " ")
		t.Errorf("the CSV's pod spec\n%s\nis not config/manager's\n%s", gotJSON, wantJSON)
	}
}
