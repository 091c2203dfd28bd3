package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// How a process outside the cluster runs with exactly the permissions the operator's OLM bundle grants.
// OLM installs a ClusterServiceVersion by creating, for its install strategy's ServiceAccount:
//   - a ClusterRole and a ClusterRoleBinding per spec.install.spec.clusterPermissions entry;
//   - a Role and a RoleBinding in the operator's namespace per spec.install.spec.permissions entry, copied
//     into every other target namespace of the OperatorGroup; when the OperatorGroup targets all
//     namespaces, also a ClusterRole and a ClusterRoleBinding with those rules (its "singleton" RBAC);
//   - the bundle's other manifests, among them RBAC the operator refers to by name (a ClusterRole it binds
//     to the ServiceAccounts it impersonates, the roles it aggregates into admin, edit and view).
//
// InstallCSVRBAC creates the same from the CSV file (the bundle as it ships, read at the time of the call),
// then mints a token for the ServiceAccount with the TokenRequest API and writes a kubeconfig with it:
// a process given that kubeconfig can do what the bundle allows, and nothing more.

// Defaults of CSVInstall.
const (
	DefaultCSVTokenExpiration = 24 * time.Hour
	// DefaultCSVAuthorizedTimeout bounds the wait until the API server's authorizer applies the new
	// bindings.
	DefaultCSVAuthorizedTimeout = 30 * time.Second
)

// CSVInstallLabel is on every object InstallCSVRBAC creates from the CSV's permissions; its value is the
// operator's namespace, which tells the installs apart. A same-named object without it is not taken over.
const CSVInstallLabel = "localcluster.platform-operator.dev/csv-install"

// BundleManifestLabel is on the bundle's own RBAC manifests InstallCSVRBAC creates (BundleRBAC); its
// value is the CSV's name. Installs into several namespaces share them, as they share a cluster-scoped
// ClusterRole under OLM.
const BundleManifestLabel = "localcluster.platform-operator.dev/bundle-manifest"

// BundleCSVGlob is where `make bundle` writes the ClusterServiceVersion, relative to the repository root.
const BundleCSVGlob = "bundle/manifests/*.clusterserviceversion.yaml"

// FindCSV returns the bundle's ClusterServiceVersion file under repoRoot: the one file BundleCSVGlob
// matches.
func FindCSV(repoRoot string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(repoRoot, BundleCSVGlob))
	if err != nil {
		return "", err
	}
	if len(matches) != 1 {
		return "", fmt.Errorf("%d files match %s in %s, want exactly one (make bundle writes it)", len(matches), BundleCSVGlob, repoRoot)
	}
	return matches[0], nil
}

// ReadCSV reads a ClusterServiceVersion file.
func ReadCSV(path string) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(data, csv); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if csv.Kind != operatorsv1alpha1.ClusterServiceVersionKind || csv.Name == "" {
		return nil, fmt.Errorf("%s: kind %q named %q is not a ClusterServiceVersion", path, csv.Kind, csv.Name)
	}
	return csv, nil
}

// CSVServiceAccount is the ServiceAccount the operator's pod runs as: that of the install strategy's
// Deployment, or of the one named deployment when the CSV has several.
func CSVServiceAccount(csv *operatorsv1alpha1.ClusterServiceVersion, deployment string) (string, error) {
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	var names []string
	for _, d := range deps {
		names = append(names, d.Name)
		if d.Name != deployment && (deployment != "" || len(deps) != 1) {
			continue
		}
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			return "", fmt.Errorf("CSV %s: deployment %s names no serviceAccountName: its pod would run as the namespace's default ServiceAccount, which the CSV grants nothing", csv.Name, d.Name)
		}
		return sa, nil
	}
	if deployment != "" {
		return "", fmt.Errorf("CSV %s has no deployment %s (it has %q)", csv.Name, deployment, names)
	}
	return "", fmt.Errorf("CSV %s has %d deployments (%q): name the operator's", csv.Name, len(deps), names)
}

// CSVRBAC returns what OLM creates to grant csv's permissions when it is installed in namespace for an
// OperatorGroup targeting targets (none: all namespaces): the ServiceAccounts the permissions name (in
// namespace), then a ClusterRole and ClusterRoleBinding per clusterPermissions entry, then a Role and
// RoleBinding per permissions entry in namespace and in every other target namespace, or, for all
// namespaces, a ClusterRole and ClusterRoleBinding per permissions entry besides the Role and
// RoleBinding in namespace. It refuses an install mode the CSV does not support, as OLM does. Names are
// derived from the CSV's name, the namespace and the entry's index, so installing twice gives the same
// objects; every object carries CSVInstallLabel=namespace.
func CSVRBAC(csv *operatorsv1alpha1.ClusterServiceVersion, namespace string, targets []string) ([]client.Object, error) {
	if namespace == "" {
		return nil, errors.New("the operator's namespace is empty")
	}
	modes, err := operatorsv1alpha1.NewInstallModeSet(csv.Spec.InstallModes)
	if err != nil {
		return nil, fmt.Errorf("CSV %s: %w", csv.Name, err)
	}
	allNamespaces := len(targets) == 0
	if allNamespaces {
		targets = []string{metav1.NamespaceAll}
	}
	if err := modes.Supports(namespace, targets); err != nil {
		return nil, fmt.Errorf("CSV %s installed in %s for %q: %w", csv.Name, namespace, targets, err)
	}
	spec := csv.Spec.InstallStrategy.StrategySpec
	labels := map[string]string{CSVInstallLabel: namespace}
	meta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
	}
	subject := func(p operatorsv1alpha1.StrategyDeploymentPermissions) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: p.ServiceAccountName}}
	}
	clusterPair := func(name string, p operatorsv1alpha1.StrategyDeploymentPermissions) []client.Object {
		return []client.Object{
			&rbacv1.ClusterRole{ObjectMeta: meta("", name), Rules: copyRules(p.Rules)},
			&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", name), Subjects: subject(p),
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}},
		}
	}

	var objs []client.Object
	var sas []string
	for _, p := range slices.Concat(spec.ClusterPermissions, spec.Permissions) {
		if p.ServiceAccountName == "" {
			return nil, fmt.Errorf("CSV %s: a permissions entry names no serviceAccountName", csv.Name)
		}
		if !slices.Contains(sas, p.ServiceAccountName) {
			sas = append(sas, p.ServiceAccountName)
			objs = append(objs, &corev1.ServiceAccount{ObjectMeta: meta(namespace, p.ServiceAccountName)})
		}
	}
	for i, p := range spec.ClusterPermissions {
		objs = append(objs, clusterPair(fmt.Sprintf("%s-%s-cluster-%d", csv.Name, namespace, i), p)...)
	}
	roleNamespaces := []string{namespace}
	for _, t := range targets {
		if t != metav1.NamespaceAll && !slices.Contains(roleNamespaces, t) {
			roleNamespaces = append(roleNamespaces, t)
		}
	}
	for i, p := range spec.Permissions {
		name := fmt.Sprintf("%s-%d", csv.Name, i)
		for _, ns := range roleNamespaces {
			objs = append(objs,
				&rbacv1.Role{ObjectMeta: meta(ns, name), Rules: copyRules(p.Rules)},
				&rbacv1.RoleBinding{ObjectMeta: meta(ns, name), Subjects: subject(p),
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
		}
		if allNamespaces {
			objs = append(objs, clusterPair(fmt.Sprintf("%s-%s-%d", csv.Name, namespace, i), p)...)
		}
	}
	return objs, nil
}

// BundleRBAC reads the RBAC manifests of the bundle directory dir, every *.yaml file there but the CSV
// (csvPath): the ClusterRoles, ClusterRoleBindings, Roles and RoleBindings OLM creates beside the CSV's
// permissions, the namespaced ones in namespace, each labelled BundleManifestLabel=csvName. Other kinds
// (CRDs, Services, ...) are left out: they grant nothing.
func BundleRBAC(dir, csvPath, csvName, namespace string) ([]client.Object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []client.Object
	for _, f := range files {
		if same, err := sameFile(f, csvPath); err != nil || same {
			if err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		var obj client.Object
		switch tm.GroupVersionKind() {
		case rbacv1.SchemeGroupVersion.WithKind("ClusterRole"):
			obj = &rbacv1.ClusterRole{}
		case rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"):
			obj = &rbacv1.ClusterRoleBinding{}
		case rbacv1.SchemeGroupVersion.WithKind("Role"):
			obj = &rbacv1.Role{}
		case rbacv1.SchemeGroupVersion.WithKind("RoleBinding"):
			obj = &rbacv1.RoleBinding{}
		default:
			continue
		}
		if err := yaml.Unmarshal(data, obj); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if _, namespaced := obj.(*rbacv1.Role); namespaced {
			obj.SetNamespace(namespace)
		}
		if _, namespaced := obj.(*rbacv1.RoleBinding); namespaced {
			obj.SetNamespace(namespace)
		}
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[BundleManifestLabel] = csvName
		obj.SetLabels(labels)
		obj.SetCreationTimestamp(metav1.Time{})
		objs = append(objs, obj)
	}
	return objs, nil
}

func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// copyRules is a deep copy: the objects must not share slices with the CSV.
func copyRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rules))
	for i := range rules {
		rules[i].DeepCopyInto(&out[i])
	}
	return out
}

// CSVInstall says which CSV InstallCSVRBAC installs, and how.
type CSVInstall struct {
	// CSVPath is the ClusterServiceVersion file, e.g. FindCSV(repoRoot). It is read by every call, so the
	// permissions are those of the file at that moment.
	CSVPath string
	// Namespace is the operator's namespace (the CSV's and its OperatorGroup's): its ServiceAccount,
	// Roles and leader election Lease live there. It is created when missing.
	Namespace string
	// TargetNamespaces are the OperatorGroup's target namespaces, what OLM gives the operator as
	// WATCH_NAMESPACE; they must exist. None: all namespaces (AllNamespaces). [Namespace] alone is
	// OwnNamespace.
	TargetNamespaces []string
	// Deployment names the install strategy's Deployment whose ServiceAccount the token is for; needed
	// only when the CSV has more than one.
	Deployment string
	// KubeconfigPath is where the kubeconfig is written (mode 0600). Default: a new file in the system's
	// temporary directory, which Uninstall removes.
	KubeconfigPath string
	// TokenExpiration is the token's lifetime. Default: DefaultCSVTokenExpiration.
	TokenExpiration time.Duration
	// AuthorizedTimeout bounds the wait until the API server authorizes what the bindings grant.
	// Default: DefaultCSVAuthorizedTimeout.
	AuthorizedTimeout time.Duration
}

// CSVIdentity is a ServiceAccount with exactly a CSV's permissions, and a kubeconfig that authenticates
// as it.
type CSVIdentity struct {
	// CSV is the name of the ClusterServiceVersion the permissions come from.
	CSV string
	// Namespace and ServiceAccount name the identity; Username is what the API server calls it
	// (system:serviceaccount:<namespace>:<name>).
	Namespace, ServiceAccount, Username string
	// Kubeconfig is the file: the API server's URL and CA, and the ServiceAccount's token.
	Kubeconfig string
	// ExpiresAt is when the token expires.
	ExpiresAt time.Time
	// Objects are what InstallCSVRBAC created or updated for this install (CSVRBAC's objects).
	Objects []client.Object
	// BundleObjects are the bundle's RBAC manifests it created or updated (BundleRBAC), shared with other
	// installs of the CSV: Uninstall leaves them.
	BundleObjects []client.Object

	admin         client.Client
	ownKubeconfig bool
}

// InstallCSVRBAC creates in the cluster of admin (a configuration allowed to grant the CSV's permissions,
// such as the cluster's admin) what OLM would create for the CSV installed as o says (CSVRBAC): the
// namespace when missing, then each object, created or, when it exists with CSVInstallLabel for this
// namespace, updated to the CSV's rules; objects of an earlier install into the same namespace that the
// CSV no longer has are deleted. The bundle's RBAC manifests in the CSV's directory (BundleRBAC) are
// created or updated the same way. It then waits until the API server authorizes the ServiceAccount for
// the first rule of every binding, mints a token for the operator's ServiceAccount (CSVServiceAccount)
// and writes the kubeconfig.
func InstallCSVRBAC(ctx context.Context, admin *rest.Config, o CSVInstall) (*CSVIdentity, error) {
	if o.TokenExpiration == 0 {
		o.TokenExpiration = DefaultCSVTokenExpiration
	}
	if o.AuthorizedTimeout == 0 {
		o.AuthorizedTimeout = DefaultCSVAuthorizedTimeout
	}
	csv, err := ReadCSV(o.CSVPath)
	if err != nil {
		return nil, err
	}
	sa, err := CSVServiceAccount(csv, o.Deployment)
	if err != nil {
		return nil, err
	}
	objs, err := CSVRBAC(csv, o.Namespace, o.TargetNamespaces)
	if err != nil {
		return nil, err
	}
	bundle, err := BundleRBAC(filepath.Dir(o.CSVPath), o.CSVPath, csv.Name, o.Namespace)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(objs, func(obj client.Object) bool {
		_, ok := obj.(*corev1.ServiceAccount)
		return ok && obj.GetName() == sa
	}) {
		return nil, fmt.Errorf("CSV %s grants ServiceAccount %s, which its deployment runs as, no permissions", csv.Name, sa)
	}
	c, err := client.New(admin, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	id := &CSVIdentity{
		CSV: csv.Name, Namespace: o.Namespace, ServiceAccount: sa,
		Username: "system:serviceaccount:" + o.Namespace + ":" + sa,
		Objects:  objs, BundleObjects: bundle, admin: c,
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create the operator's namespace: %w", err)
	}
	for _, obj := range objs {
		if err := applyOwned(ctx, c, obj, CSVInstallLabel); err != nil {
			return nil, err
		}
	}
	for _, obj := range bundle {
		if err := applyOwned(ctx, c, obj, BundleManifestLabel); err != nil {
			return nil, err
		}
	}
	if err := pruneCSVRBAC(ctx, c, o.Namespace, objs); err != nil {
		return nil, err
	}
	if err := waitCSVAuthorized(ctx, c, objs, o.AuthorizedTimeout); err != nil {
		return nil, err
	}

	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	tr, err := cs.CoreV1().ServiceAccounts(o.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(o.TokenExpiration / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for ServiceAccount %s/%s: %w", o.Namespace, sa, err)
	}
	id.ExpiresAt = tr.Status.ExpirationTimestamp.Time
	path := o.KubeconfigPath
	if path == "" {
		f, err := os.CreateTemp("", "platform-operator-"+o.Namespace+"-*.kubeconfig")
		if err != nil {
			return nil, err
		}
		path = f.Name()
		_ = f.Close()
		id.ownKubeconfig = true
	}
	if err := writeTokenKubeconfig(admin, o.Namespace, id.Username, tr.Status.Token, path); err != nil {
		return nil, err
	}
	id.Kubeconfig = path
	return id, nil
}

// Uninstall deletes the objects InstallCSVRBAC made (objects already gone are fine), which also revokes
// the token, and the kubeconfig file when InstallCSVRBAC chose its path. The namespace stays.
func (id *CSVIdentity) Uninstall(ctx context.Context) error {
	var errs []error
	for _, obj := range slices.Backward(id.Objects) {
		if err := id.admin.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err))
		}
	}
	if id.ownKubeconfig {
		if err := os.Remove(id.Kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// applyOwned creates obj, or updates the existing object of its name to obj's labels, rules or subjects
// when that one carries obj's value of the label owner (a ServiceAccount is left as it is: it holds
// nothing from the CSV).
func applyOwned(ctx context.Context, c client.Client, obj client.Object, owner string) error {
	err := c.Create(ctx, obj)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	}
	existing, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return err
	}
	adopt := owner == BundleManifestLabel && existing.GetLabels()[owner] == "" && sameRBAC(existing, obj)
	if got, want := existing.GetLabels()[owner], obj.GetLabels()[owner]; got != want && !adopt {
		return fmt.Errorf("%T %s/%s exists and was not made by InstallCSVRBAC (label %s=%q, want %q): not taking it over",
			obj, obj.GetNamespace(), obj.GetName(), owner, got, want)
	}
	existing.SetLabels(obj.GetLabels())
	switch want := obj.(type) {
	case *corev1.ServiceAccount:
		return nil
	case *rbacv1.ClusterRole:
		existing.(*rbacv1.ClusterRole).Rules = want.Rules
		existing.(*rbacv1.ClusterRole).AggregationRule = want.AggregationRule
	case *rbacv1.Role:
		existing.(*rbacv1.Role).Rules = want.Rules
	case *rbacv1.ClusterRoleBinding:
		if existing.(*rbacv1.ClusterRoleBinding).RoleRef != want.RoleRef {
			return fmt.Errorf("ClusterRoleBinding %s binds another role", want.Name)
		}
		existing.(*rbacv1.ClusterRoleBinding).Subjects = want.Subjects
	case *rbacv1.RoleBinding:
		if existing.(*rbacv1.RoleBinding).RoleRef != want.RoleRef {
			return fmt.Errorf("RoleBinding %s/%s binds another role", want.Namespace, want.Name)
		}
		existing.(*rbacv1.RoleBinding).Subjects = want.Subjects
	default:
		return fmt.Errorf("InstallCSVRBAC does not make %T", obj)
	}
	if err := c.Update(ctx, existing); err != nil {
		return fmt.Errorf("update %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	return nil
}

// sameRBAC reports whether existing grants exactly what want grants: the same rules (and aggregation) or
// the same role and subjects. A bundle manifest applied unlabelled by another installer (`make deploy`
// applies config/default, which holds the same ClusterRoles) is then the same manifest, not a foreign
// object, and is adopted; one whose grants differ is still refused.
func sameRBAC(existing, want client.Object) bool {
	switch w := want.(type) {
	case *rbacv1.ClusterRole:
		e, ok := existing.(*rbacv1.ClusterRole)
		return ok && equality.Semantic.DeepEqual(e.Rules, w.Rules) && equality.Semantic.DeepEqual(e.AggregationRule, w.AggregationRule)
	case *rbacv1.Role:
		e, ok := existing.(*rbacv1.Role)
		return ok && equality.Semantic.DeepEqual(e.Rules, w.Rules)
	case *rbacv1.ClusterRoleBinding:
		e, ok := existing.(*rbacv1.ClusterRoleBinding)
		return ok && e.RoleRef == w.RoleRef && equality.Semantic.DeepEqual(e.Subjects, w.Subjects)
	case *rbacv1.RoleBinding:
		e, ok := existing.(*rbacv1.RoleBinding)
		return ok && e.RoleRef == w.RoleRef && equality.Semantic.DeepEqual(e.Subjects, w.Subjects)
	}
	return false
}

// pruneCSVRBAC deletes the roles and bindings labelled for namespace's install that keep is without: what
// an earlier install granted and the CSV no longer does.
func pruneCSVRBAC(ctx context.Context, c client.Client, namespace string, keep []client.Object) error {
	type key struct {
		kind      string
		namespace string
		name      string
	}
	kept := map[key]bool{}
	for _, obj := range keep {
		kept[key{fmt.Sprintf("%T", obj), obj.GetNamespace(), obj.GetName()}] = true
	}
	sel := client.MatchingLabels{CSVInstallLabel: namespace}
	var stale []client.Object
	var crs rbacv1.ClusterRoleList
	var crbs rbacv1.ClusterRoleBindingList
	var roles rbacv1.RoleList
	var rbs rbacv1.RoleBindingList
	for _, l := range []client.ObjectList{&crs, &crbs, &roles, &rbs} {
		if err := c.List(ctx, l, sel); err != nil {
			return err
		}
	}
	for i := range crs.Items {
		stale = append(stale, &crs.Items[i])
	}
	for i := range crbs.Items {
		stale = append(stale, &crbs.Items[i])
	}
	for i := range roles.Items {
		stale = append(stale, &roles.Items[i])
	}
	for i := range rbs.Items {
		stale = append(stale, &rbs.Items[i])
	}
	var errs []error
	for _, obj := range stale {
		if kept[key{fmt.Sprintf("%T", obj), obj.GetNamespace(), obj.GetName()}] {
			continue
		}
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waitCSVAuthorized polls SubjectAccessReviews until the API server allows each binding's subject the
// first rule of the role it binds: the RBAC authorizer learns of new bindings from its informers a moment
// after they are created, and the operator must not start before.
func waitCSVAuthorized(ctx context.Context, c client.Client, objs []client.Object, timeout time.Duration) error {
	rules := map[string][]rbacv1.PolicyRule{}
	for _, obj := range objs {
		switch r := obj.(type) {
		case *rbacv1.ClusterRole:
			rules["ClusterRole/"+r.Name] = r.Rules
		case *rbacv1.Role:
			rules["Role/"+r.Namespace+"/"+r.Name] = r.Rules
		}
	}
	var reviews []authorizationv1.SubjectAccessReview
	for _, obj := range objs {
		var subjects []rbacv1.Subject
		var rs []rbacv1.PolicyRule
		namespace := ""
		switch b := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			subjects, rs = b.Subjects, rules["ClusterRole/"+b.RoleRef.Name]
		case *rbacv1.RoleBinding:
			subjects, rs, namespace = b.Subjects, rules["Role/"+b.Namespace+"/"+b.RoleRef.Name], b.Namespace
		default:
			continue
		}
		if len(rs) == 0 {
			continue
		}
		for _, s := range subjects {
			reviews = append(reviews, ruleReview(s, rs[0], namespace))
		}
	}
	for _, sar := range reviews {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			r := sar.DeepCopy()
			if err := c.Create(ctx, r); err != nil {
				return false, err
			}
			last = r.Status.Reason
			return r.Status.Allowed, nil
		})
		if err != nil {
			return fmt.Errorf("the API server does not authorize %s for %+v%+v: %w (%s)", sar.Spec.User,
				ptr.Deref(sar.Spec.ResourceAttributes, authorizationv1.ResourceAttributes{}),
				ptr.Deref(sar.Spec.NonResourceAttributes, authorizationv1.NonResourceAttributes{}), err, last)
		}
	}
	return nil
}

// ruleReview asks whether ServiceAccount s may do the first thing rule allows, in namespace.
func ruleReview(s rbacv1.Subject, rule rbacv1.PolicyRule, namespace string) authorizationv1.SubjectAccessReview {
	first := func(l []string) string {
		if len(l) == 0 {
			return ""
		}
		return l[0]
	}
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + s.Namespace + ":" + s.Name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + s.Namespace, "system:authenticated"},
	}
	if len(rule.NonResourceURLs) > 0 {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: rule.NonResourceURLs[0], Verb: first(rule.Verbs)}
	} else {
		resource, sub, _ := strings.Cut(first(rule.Resources), "/")
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: first(rule.Verbs), Group: first(rule.APIGroups),
			Resource: resource, Subresource: sub, Name: first(rule.ResourceNames),
		}
	}
	return authorizationv1.SubjectAccessReview{Spec: spec}
}

// writeTokenKubeconfig writes a kubeconfig for the API server of admin (its URL and CA) that
// authenticates with token.
func writeTokenKubeconfig(admin *rest.Config, namespace, user, token, path string) error {
	ca := admin.CAData
	if len(ca) == 0 && admin.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(admin.CAFile); err != nil {
			return err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: namespace}
	kc.CurrentContext = "local"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Forbidden returns the lines of text (a process's log) that report a request of user the API server
// refused for lack of permission: `... is forbidden: User "<user>" cannot <verb> resource ...`, as
// client-go's errors say it, quoted plainly or inside a JSON log line. A refusal for another user (a
// tenant the operator impersonates) or another reason (Pod Security) is not one.
func Forbidden(text, user string) []string {
	re := regexp.MustCompile(`User \\?"` + regexp.QuoteMeta(user) + `\\?" cannot `)
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if re.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}
