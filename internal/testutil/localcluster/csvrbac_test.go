package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// testCSV is a ClusterServiceVersion with the shape of the bundle's: one Deployment, cluster-wide rules
// for TokenReviews, namespaced rules for ConfigMaps (plus what rules the caller adds), and every install
// mode but MultiNamespace.
func testCSV(extraRules string) string {
	return `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: test-operator.v0.0.1
spec:
  displayName: test
  install:
    strategy: deployment
    spec:
      clusterPermissions:
      - serviceAccountName: test-operator
        rules:
        - apiGroups: [authentication.k8s.io]
          resources: [tokenreviews]
          verbs: [create]
      permissions:
      - serviceAccountName: test-operator
        rules:
        - apiGroups: [""]
          resources: [configmaps]
          verbs: [get, list]
` + extraRules + `      deployments:
      - name: test-operator
        spec:
          selector:
            matchLabels: {app: test}
          template:
            metadata:
              labels: {app: test}
            spec:
              serviceAccountName: test-operator
              containers:
              - name: manager
                image: example/test:1
  installModes:
  - {type: OwnNamespace, supported: true}
  - {type: SingleNamespace, supported: true}
  - {type: MultiNamespace, supported: false}
  - {type: AllNamespaces, supported: true}
`
}

// leaseRules are more namespaced rules for testCSV: a second entry.
const leaseRules = `      - serviceAccountName: test-operator
        rules:
        - apiGroups: [coordination.k8s.io]
          resources: [leases]
          verbs: [get, create]
`

func parseCSV(t *testing.T, doc string) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv, err := ReadCSV(writeFile(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	return csv
}

// describeObjects is "Kind namespace/name -> subject or rule summary", one per object, for comparison.
func describeObjects(objs []client.Object) []string {
	var out []string
	for _, obj := range objs {
		s := fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName())
		switch o := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			s += fmt.Sprintf(" %s %s -> %s/%s", o.RoleRef.Kind, o.RoleRef.Name, o.Subjects[0].Namespace, o.Subjects[0].Name)
		case *rbacv1.RoleBinding:
			s += fmt.Sprintf(" %s %s -> %s/%s", o.RoleRef.Kind, o.RoleRef.Name, o.Subjects[0].Namespace, o.Subjects[0].Name)
		case *rbacv1.ClusterRole:
			s += " " + strings.Join(o.Rules[0].Resources, ",")
		case *rbacv1.Role:
			s += " " + strings.Join(o.Rules[0].Resources, ",")
		}
		out = append(out, s)
	}
	return out
}

func TestCSVRBAC(t *testing.T) {
	csv := parseCSV(t, testCSV(""))
	const (
		sa         = "*v1.ServiceAccount op/test-operator"
		tokenRole  = "*v1.ClusterRole /test-operator.v0.0.1-op-cluster-0 tokenreviews"
		tokenBind  = "*v1.ClusterRoleBinding /test-operator.v0.0.1-op-cluster-0 ClusterRole test-operator.v0.0.1-op-cluster-0 -> op/test-operator"
		ownRole    = "*v1.Role op/test-operator.v0.0.1-0 configmaps"
		ownBind    = "*v1.RoleBinding op/test-operator.v0.0.1-0 Role test-operator.v0.0.1-0 -> op/test-operator"
		teamRole   = "*v1.Role team/test-operator.v0.0.1-0 configmaps"
		teamBind   = "*v1.RoleBinding team/test-operator.v0.0.1-0 Role test-operator.v0.0.1-0 -> op/test-operator"
		allRole    = "*v1.ClusterRole /test-operator.v0.0.1-op-0 configmaps"
		allBinding = "*v1.ClusterRoleBinding /test-operator.v0.0.1-op-0 ClusterRole test-operator.v0.0.1-op-0 -> op/test-operator"
	)
	tests := []struct {
		name      string
		namespace string
		targets   []string
		want      []string
		wantErr   string
	}{
		{"OwnNamespace: the namespaced rules in the operator's namespace only", "op", []string{"op"},
			[]string{sa, tokenRole, tokenBind, ownRole, ownBind}, ""},
		{"SingleNamespace: copied into the target namespace", "op", []string{"team"},
			[]string{sa, tokenRole, tokenBind, ownRole, ownBind, teamRole, teamBind}, ""},
		{"AllNamespaces: the namespaced rules cluster-wide too", "op", nil,
			[]string{sa, tokenRole, tokenBind, ownRole, ownBind, allRole, allBinding}, ""},
		{"MultiNamespace, which the CSV does not support", "op", []string{"team", "other"},
			nil, "MultiNamespace InstallModeType not supported"},
		{"no operator namespace", "", []string{"team"}, nil, "namespace is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := CSVRBAC(csv, tt.namespace, tt.targets)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			if got := describeObjects(objs); !slices.Equal(got, tt.want) {
				t.Errorf("objects\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for _, obj := range objs {
				if obj.GetLabels()[CSVInstallLabel] != tt.namespace {
					t.Errorf("%T %s lacks %s=%s", obj, obj.GetName(), CSVInstallLabel, tt.namespace)
				}
			}
		})
	}

	t.Run("an install mode the CSV does not support is refused, as OLM refuses it", func(t *testing.T) {
		own := parseCSV(t, strings.Replace(testCSV(""), "{type: AllNamespaces, supported: true}", "{type: AllNamespaces, supported: false}", 1))
		if _, err := CSVRBAC(own, "op", nil); err == nil || !strings.Contains(err.Error(), "AllNamespaces InstallModeType not supported") {
			t.Errorf("AllNamespaces: %v", err)
		}
		if _, err := CSVRBAC(own, "op", []string{"op"}); err != nil {
			t.Errorf("control, OwnNamespace: %v", err)
		}
	})
	t.Run("an entry without a ServiceAccount", func(t *testing.T) {
		bad := parseCSV(t, strings.Replace(testCSV(""), "      - serviceAccountName: test-operator\n        rules:\n        - apiGroups: [\"\"]", "      - rules:\n        - apiGroups: [\"\"]", 1))
		if _, err := CSVRBAC(bad, "op", []string{"op"}); err == nil || !strings.Contains(err.Error(), "names no serviceAccountName") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("the CSV is not changed", func(t *testing.T) {
		before := parseCSV(t, testCSV(""))
		objs, err := CSVRBAC(csv, "op", nil)
		if err != nil {
			t.Fatal(err)
		}
		objs[1].(*rbacv1.ClusterRole).Rules[0].Verbs[0] = "changed"
		if !equalJSON(t, before.Spec.InstallStrategy, csv.Spec.InstallStrategy) {
			t.Error("the objects share rules with the CSV")
		}
	})
}

func TestCSVServiceAccount(t *testing.T) {
	one := parseCSV(t, testCSV(""))
	two := parseCSV(t, testCSV(""))
	d := two.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0]
	d.Name, d.Spec.Template.Spec.ServiceAccountName = "second", "second-sa"
	two.Spec.InstallStrategy.StrategySpec.DeploymentSpecs = append(two.Spec.InstallStrategy.StrategySpec.DeploymentSpecs, d)
	noSA := parseCSV(t, strings.Replace(testCSV(""), "              serviceAccountName: test-operator\n", "", 1))
	tests := []struct {
		name       string
		csv        *operatorsv1alpha1.ClusterServiceVersion
		deployment string
		want       string
		wantErr    string
	}{
		{"the one deployment", one, "", "test-operator", ""},
		{"the one deployment, named", one, "test-operator", "test-operator", ""},
		{"a deployment the CSV lacks", one, "other", "", "has no deployment other"},
		{"two deployments, unnamed", two, "", "", "has 2 deployments"},
		{"two deployments, the second named", two, "second", "second-sa", ""},
		{"a pod with the default ServiceAccount", noSA, "", "", "names no serviceAccountName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CSVServiceAccount(tt.csv, tt.deployment)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			if got != tt.want {
				t.Errorf("= %q, want %q", got, tt.want)
			}
		})
	}
}

// bundleDir writes a bundle directory: testCSV, a ClusterRole and a Role as extra manifests, and a
// Service, which grants nothing.
func bundleDir(t *testing.T) (dir, csvPath string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		"test-operator.clusterserviceversion.yaml": testCSV(""),
		"test-operator-tenant_rbac.authorization.k8s.io_v1_clusterrole.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  creationTimestamp: null
  labels: {app.kubernetes.io/name: test}
  name: test-operator-tenant
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
`,
		"test-operator-local_rbac.authorization.k8s.io_v1_role.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: test-operator-local
  namespace: somewhere-else
rules:
- apiGroups: [""]
  resources: [services]
  verbs: [get]
`,
		"test-operator-metrics_v1_service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: test-operator-metrics\nspec:\n  ports: [{port: 8443}]\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "test-operator.clusterserviceversion.yaml")
}

func TestBundleRBAC(t *testing.T) {
	dir, csvPath := bundleDir(t)
	objs, err := BundleRBAC(dir, csvPath, "test-operator.v0.0.1", "op")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"*v1.Role op/test-operator-local services",
		"*v1.ClusterRole /test-operator-tenant pods",
	}
	if got := describeObjects(objs); !slices.Equal(got, want) {
		t.Errorf("objects %q, want %q: the RBAC manifests (namespaced ones in the operator's namespace), not the CSV or the Service", got, want)
	}
	for _, obj := range objs {
		if obj.GetLabels()[BundleManifestLabel] != "test-operator.v0.0.1" {
			t.Errorf("%s labels %v: want %s", obj.GetName(), obj.GetLabels(), BundleManifestLabel)
		}
	}
	if got := objs[1].GetLabels()["app.kubernetes.io/name"]; got != "test" {
		t.Errorf("the ClusterRole lost the manifest's own labels: %v", objs[1].GetLabels())
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("kind: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := BundleRBAC(dir, csvPath, "x", "op"); err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Errorf("a manifest that does not parse: %v", err)
	}
}

func TestReadCSV(t *testing.T) {
	if _, err := ReadCSV(writeFile(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")); err == nil || !strings.Contains(err.Error(), "is not a ClusterServiceVersion") {
		t.Errorf("a ConfigMap: %v", err)
	}
	if _, err := ReadCSV(filepath.Join(t.TempDir(), "absent.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	dir := t.TempDir()
	if _, err := FindCSV(dir); err == nil || !strings.Contains(err.Error(), "0 files match") {
		t.Errorf("FindCSV of an empty directory: %v", err)
	}
}

// TestBundleCSV reads the bundle as it ships: one CSV, whose Deployment's ServiceAccount is granted
// something, and which supports the install modes the e2e suite uses (OwnNamespace for the scoped
// operators, AllNamespaces for the catalyst ones).
func TestBundleCSV(t *testing.T) {
	root, err := testutil.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	path, err := FindCSV(root)
	if err != nil {
		t.Fatal(err)
	}
	csv, err := ReadCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := CSVServiceAccount(csv, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, targets := range [][]string{{"operator-ns"}, nil} {
		objs, err := CSVRBAC(csv, "operator-ns", targets)
		if err != nil {
			t.Fatalf("targets %q: %v", targets, err)
		}
		if !slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.(*rbacv1.RoleBinding); return ok }) {
			t.Errorf("targets %q: no RoleBinding for %s: %v", targets, sa, describeObjects(objs))
		}
	}
	bundle, err := BundleRBAC(filepath.Dir(path), path, csv.Name, "operator-ns")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(bundle, func(o client.Object) bool { return o.GetName() == "platform-operator-metrics-reader" }) {
		t.Errorf("the bundle's RBAC manifests %v lack the metrics-reader ClusterRole", describeObjects(bundle))
	}
}

func TestForbidden(t *testing.T) {
	const user = "system:serviceaccount:op:platform-operator-controller-manager"
	log := strings.Join([]string{
		`E0101 leaderelection.go:448] error retrieving resource lock op/x: leases.coordination.k8s.io "x" is forbidden: User "` + user + `" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "op"`,
		`{"level":"error","msg":"Reconciler error","error":"namespaces is forbidden: User \"` + user + `\" cannot create resource \"namespaces\" in API group \"\" at the cluster scope"}`,
		`{"level":"info","msg":"tenant refused","error":"deployments.apps is forbidden: User \"system:serviceaccount:team:deployer\" cannot create resource \"deployments\""}`,
		`{"level":"error","error":"pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\""}`,
		`{"level":"error","error":"configmaps is forbidden: User \"` + user + `-2\" cannot list resource \"configmaps\""}`,
		`{"level":"info","msg":"all fine"}`,
		`W0101 reflector.go:569] "Failed to watch" err="failed to list *v1.Secret: secrets is forbidden: User \"` + user + `\" cannot list resource \"secrets\" in API group \"\" in the namespace \"op\"" logger="UnhandledError"`,
	}, "\n")
	got := Forbidden(log, user)
	if len(got) != 3 || !strings.Contains(got[0], `"leases"`) || !strings.Contains(got[1], `\"namespaces\"`) || !strings.Contains(got[2], `\"secrets\"`) {
		t.Errorf("Forbidden = %q, want the leases, namespaces and secrets lines (not the tenant's, Pod Security's or another ServiceAccount's)", got)
	}
	if got := Forbidden("", user); got != nil {
		t.Errorf("Forbidden of an empty log = %q", got)
	}
}

// TestInstallCSVRBACOnLocalCluster proves against a real API server that the kubeconfig of
// InstallCSVRBAC authenticates as the CSV's ServiceAccount and is allowed what the CSV grants, where it
// grants it, and nothing else; and that installing again follows the CSV file as it is then.
func TestInstallCSVRBACOnLocalCluster(t *testing.T) {
	c := startWithoutExternalCRDs(t)
	admin := c.Client()
	createNamespaces(t, admin, "team-a", "team-b")
	csvPath := writeFile(t, testCSV(""))
	install := func(t *testing.T, o CSVInstall) (*CSVIdentity, client.Client) {
		t.Helper()
		if o.CSVPath == "" {
			o.CSVPath = csvPath
		}
		id, err := InstallCSVRBAC(t.Context(), c.Config(), o)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := kubeconfigClient(id.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return id, sc
	}
	canList := func(sc client.Client, ns string) error {
		return sc.List(context.Background(), &corev1.ConfigMapList{}, client.InNamespace(ns))
	}
	wantForbidden := func(t *testing.T, what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want forbidden", what, err)
		}
	}

	t.Run("OwnNamespace", func(t *testing.T) {
		id, sc := install(t, CSVInstall{Namespace: "op-own", TargetNamespaces: []string{"op-own"}})
		if id.Username != "system:serviceaccount:op-own:test-operator" || id.CSV != "test-operator.v0.0.1" {
			t.Errorf("identity %+v", id)
		}
		// The API server says who the kubeconfig is: the ServiceAccount, not the admin.
		cfg, err := clientcmd.BuildConfigFromFlags("", id.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.CertData) > 0 || cfg.BearerToken == "" {
			t.Errorf("the kubeconfig should carry a token and no client certificate")
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ssr.Status.UserInfo.Username != id.Username {
			t.Errorf("the API server sees %q, want %q", ssr.Status.UserInfo.Username, id.Username)
		}
		if fi, err := os.Stat(id.Kubeconfig); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("kubeconfig file: %v, %v; want mode 0600", fi, err)
		}

		if err := canList(sc, "op-own"); err != nil {
			t.Errorf("list ConfigMaps in its own namespace: %v", err)
		}
		wantForbidden(t, "list ConfigMaps in a namespace it does not target", canList(sc, "team-a"))
		wantForbidden(t, "list Secrets, which the CSV does not grant", sc.List(t.Context(), &corev1.SecretList{}, client.InNamespace("op-own")))
		tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}}
		if err := sc.Create(t.Context(), tr); err != nil {
			t.Errorf("create a TokenReview (clusterPermissions): %v", err)
		}

		if err := id.Uninstall(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(id.Kubeconfig); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Uninstall, the kubeconfig: %v, want it removed", err)
		}
		for _, obj := range id.Objects {
			if err := admin.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				t.Errorf("after Uninstall, %T %s: %v", obj, obj.GetName(), err)
			}
		}
		// The token dies with its ServiceAccount.
		if err := eventually(t, func() error {
			if err := canList(sc, "op-own"); !apierrors.IsUnauthorized(err) {
				return fmt.Errorf("list with the token of a deleted ServiceAccount: %v, want unauthorized", err)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	})

	t.Run("SingleNamespace", func(t *testing.T) {
		_, sc := install(t, CSVInstall{Namespace: "op-single", TargetNamespaces: []string{"team-a"},
			KubeconfigPath: filepath.Join(t.TempDir(), "kubeconfig")})
		for _, ns := range []string{"op-single", "team-a"} {
			if err := canList(sc, ns); err != nil {
				t.Errorf("list ConfigMaps in %s: %v", ns, err)
			}
		}
		wantForbidden(t, "list ConfigMaps in team-b", canList(sc, "team-b"))
		wantForbidden(t, "list ConfigMaps cluster-wide", canList(sc, ""))
	})

	t.Run("AllNamespaces", func(t *testing.T) {
		_, sc := install(t, CSVInstall{Namespace: "op-all"})
		for _, ns := range []string{"team-b", ""} {
			if err := canList(sc, ns); err != nil {
				t.Errorf("list ConfigMaps in %q: %v", ns, err)
			}
		}
		wantForbidden(t, "list Secrets", sc.List(t.Context(), &corev1.SecretList{}))
	})

	t.Run("installing again follows the CSV file as it is then", func(t *testing.T) {
		path := writeFile(t, testCSV(leaseRules))
		_, sc := install(t, CSVInstall{CSVPath: path, Namespace: "op-again", TargetNamespaces: []string{"op-again"}})
		lease := func() error {
			return sc.Create(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{GenerateName: "l-", Namespace: "op-again"}})
		}
		if err := lease(); err != nil {
			t.Fatalf("create a Lease the CSV grants: %v", err)
		}
		// The same CSV without the lease rules: the second Role and its binding go.
		if err := os.WriteFile(path, []byte(testCSV("")), 0o600); err != nil {
			t.Fatal(err)
		}
		_, sc = install(t, CSVInstall{CSVPath: path, Namespace: "op-again", TargetNamespaces: []string{"op-again"}})
		if err := eventually(t, func() error {
			if err := lease(); !apierrors.IsForbidden(err) {
				return fmt.Errorf("create a Lease after the CSV dropped the rule: %v, want forbidden", err)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
		var roles rbacv1.RoleList
		if err := admin.List(t.Context(), &roles, client.InNamespace("op-again"), client.MatchingLabels{CSVInstallLabel: "op-again"}); err != nil {
			t.Fatal(err)
		}
		if len(roles.Items) != 1 {
			t.Errorf("%d Roles left, want 1", len(roles.Items))
		}
		if err := canList(sc, "op-again"); err != nil {
			t.Errorf("control: list ConfigMaps, still granted: %v", err)
		}
	})

	t.Run("the bundle's RBAC manifests, shared by the installs", func(t *testing.T) {
		_, path := bundleDir(t)
		var ids []*CSVIdentity
		for _, ns := range []string{"op-bundle-1", "op-bundle-2"} {
			id, _ := install(t, CSVInstall{CSVPath: path, Namespace: ns, TargetNamespaces: []string{ns}})
			ids = append(ids, id)
			role := &rbacv1.Role{}
			if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "test-operator-local"}, role); err != nil {
				t.Errorf("the bundle's Role in %s: %v", ns, err)
			}
		}
		if err := ids[0].Uninstall(t.Context()); err != nil {
			t.Fatal(err)
		}
		cr := &rbacv1.ClusterRole{}
		if err := admin.Get(t.Context(), client.ObjectKey{Name: "test-operator-tenant"}, cr); err != nil || cr.Labels[BundleManifestLabel] != "test-operator.v0.0.1" {
			t.Errorf("the bundle's ClusterRole after one install's Uninstall: %v, labels %v; want it kept for the other", err, cr.Labels)
		}
		if err := admin.Get(t.Context(), client.ObjectKey{Namespace: "op-bundle-2", Name: "test-operator-metrics"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("the bundle's Service: %v, want none made", err)
		}
	})

	// `make deploy` (config/default) applies the same ClusterRoles the bundle ships, unlabelled: the
	// install adopts one that grants exactly the manifest's rules and still refuses one that grants more.
	t.Run("a bundle manifest already applied with the same grants is adopted, with other grants refused", func(t *testing.T) {
		role := func(name string, verbs ...string) *rbacv1.ClusterRole {
			return &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs}},
			}
		}
		manifest := func(name string) string {
			return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + name +
				"\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get]\n"
		}
		for _, tc := range []struct {
			name    string
			applied *rbacv1.ClusterRole
			adopted bool
		}{
			{"same grants", role("test-operator-deployed", "get"), true},
			{"more grants", role("test-operator-widened", "get", "delete"), false},
		} {
			dir, path := bundleDir(t)
			if err := os.WriteFile(filepath.Join(dir, tc.applied.Name+"_rbac.authorization.k8s.io_v1_clusterrole.yaml"), []byte(manifest(tc.applied.Name)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := admin.Create(t.Context(), tc.applied.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			ns := "op-" + strings.TrimPrefix(tc.applied.Name, "test-operator-")
			_, err := InstallCSVRBAC(t.Context(), c.Config(), CSVInstall{CSVPath: path, Namespace: ns, TargetNamespaces: []string{ns}})
			got := &rbacv1.ClusterRole{}
			if gerr := admin.Get(t.Context(), client.ObjectKeyFromObject(tc.applied), got); gerr != nil {
				t.Fatal(gerr)
			}
			switch {
			case tc.adopted && err != nil:
				t.Errorf("%s: %v, want the role adopted", tc.name, err)
			case tc.adopted && got.Labels[BundleManifestLabel] != "test-operator.v0.0.1":
				t.Errorf("%s: labels %v, want the bundle's label", tc.name, got.Labels)
			case !tc.adopted && (err == nil || !strings.Contains(err.Error(), "not taking it over")):
				t.Errorf("%s: err = %v, want a refusal", tc.name, err)
			case !tc.adopted && len(got.Rules[0].Verbs) != 2:
				t.Errorf("%s: rules %v, want them untouched", tc.name, got.Rules)
			}
		}
	})

	t.Run("a same-named role it did not make is not taken over", func(t *testing.T) {
		foreign := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-operator.v0.0.1-op-foreign-cluster-0"}}
		if err := admin.Create(t.Context(), foreign); err != nil {
			t.Fatal(err)
		}
		_, err := InstallCSVRBAC(t.Context(), c.Config(), CSVInstall{CSVPath: csvPath, Namespace: "op-foreign", TargetNamespaces: []string{"op-foreign"}})
		if err == nil || !strings.Contains(err.Error(), "not taking it over") {
			t.Errorf("err = %v, want a refusal", err)
		}
		if err := admin.Get(t.Context(), client.ObjectKeyFromObject(foreign), foreign); err != nil || len(foreign.Rules) != 0 {
			t.Errorf("the foreign ClusterRole: %v, rules %v; want it untouched", err, foreign.Rules)
		}
	})

	// The bundle as it ships, installed the way the e2e suite installs the scoped operators: its
	// ServiceAccount may hold the leader election Lease and review tokens, and may not read Secrets
	// outside its namespace.
	t.Run("the bundle's CSV", func(t *testing.T) {
		root, err := testutil.FindRepoRoot(".")
		if err != nil {
			t.Fatal(err)
		}
		path, err := FindCSV(root)
		if err != nil {
			t.Fatal(err)
		}
		id, sc := install(t, CSVInstall{CSVPath: path, Namespace: "op-bundle", TargetNamespaces: []string{"op-bundle"}})
		if !strings.HasPrefix(id.Username, "system:serviceaccount:op-bundle:") {
			t.Errorf("username %s", id.Username)
		}
		if err := sc.Create(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "op-bundle"}}); err != nil {
			t.Errorf("create the leader election Lease: %v", err)
		}
		if err := sc.Create(t.Context(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "x"}}); err != nil {
			t.Errorf("create a TokenReview (metrics authentication): %v", err)
		}
		wantForbidden(t, "list Secrets in team-a", sc.List(t.Context(), &corev1.SecretList{}, client.InNamespace("team-a")))
	})
}
