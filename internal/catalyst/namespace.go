package catalyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// AppName is the app.kubernetes.io/name of everything the operator makes for an environment.
const AppName = "catalyst"

// Ownership annotations on a namespace the operator made for an Environment. A Namespace is cluster-scoped
// and cannot carry an owner reference to a namespaced Environment, so these (with the managed-by label)
// are what makes it the Environment's: the operator changes and deletes only a namespace whose
// OwnerUIDAnnotation is the Environment's UID.
var (
	// OwnerAnnotation is the Environment's namespace/name.
	OwnerAnnotation = oplabels.Annotation("catalyst-environment")
	// OwnerUIDAnnotation is the Environment's UID.
	OwnerUIDAnnotation = oplabels.Annotation("catalyst-environment-uid")
)

// Pod Security admission labels: every environment namespace enforces the administrator's level
// (--catalyst-pod-security-level, restricted by default) and audits and warns at restricted.
const (
	podSecurityEnforce        = "pod-security.kubernetes.io/enforce"
	podSecurityEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	podSecurityAudit          = "pod-security.kubernetes.io/audit"
	podSecurityWarn           = "pod-security.kubernetes.io/warn"
)

// PodSecurityLevel is a Pod Security Standard: privileged, baseline or restricted.
type PodSecurityLevel string

// The Pod Security Standards, from the most open to the tightest.
const (
	PodSecurityPrivileged PodSecurityLevel = "privileged"
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// ParsePodSecurityLevel is s as a level, or an error naming the levels there are.
func ParsePodSecurityLevel(s string) (PodSecurityLevel, error) {
	switch l := PodSecurityLevel(s); l {
	case PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted:
		return l, nil
	}
	return "", fmt.Errorf("pod security level %q is not one of privileged, baseline, restricted", s)
}

// OrRestricted is l, or restricted when l is not a level: an unset or mistyped level must not open
// anything up.
func (l PodSecurityLevel) OrRestricted() PodSecurityLevel {
	if _, err := ParsePodSecurityLevel(string(l)); err != nil {
		return PodSecurityRestricted
	}
	return l
}

// Owner is the value of OwnerAnnotation for env.
func Owner(env *catalystv1.Environment) string { return env.Namespace + "/" + env.Name }

// OwnedBy says whether ns was made by the operator for the Environment with uid.
func OwnedBy(ns *corev1.Namespace, uid types.UID) bool {
	return oplabels.IsManaged(ns.Labels) && uid != "" && ns.Annotations[OwnerUIDAnnotation] == string(uid)
}

// OwnerOf describes whose ns is, for a conflict message.
func OwnerOf(ns *corev1.Namespace) string {
	if !oplabels.IsManaged(ns.Labels) || ns.Annotations[OwnerUIDAnnotation] == "" {
		return "was not made by the operator"
	}
	return fmt.Sprintf("was made by the operator for Environment %s (uid %s)", ns.Annotations[OwnerAnnotation], ns.Annotations[OwnerUIDAnnotation])
}

// Namespace is NamespaceFor with the restricted Pod Security level.
func Namespace(env *catalystv1.Environment, p Parts, name string) *corev1.Namespace {
	return NamespaceFor(env, p, name, Settings{PodSecurityLevel: PodSecurityRestricted})
}

// NamespaceFor is the environment's namespace, named name: the catalyst.dev labels with label-safe values
// (the raw branch in an annotation), the operator's labels, the Pod Security labels, and the ownership
// annotations. It enforces s.PodSecurityLevel (restricted when that is not a level) and audits and warns
// at restricted whatever the level, the way the Kubernetes documentation suggests relaxing a namespace:
// tenants still see, in warnings and the audit log, what would break under restricted.
func NamespaceFor(env *catalystv1.Environment, p Parts, name string, s Settings) *corev1.Namespace {
	labels := oplabels.Labels(AppName, env.Name)
	labels[catalystv1.LabelTeam] = LabelValue(SanitizePart(p.Team))
	labels[catalystv1.LabelProject] = LabelValue(SanitizePart(p.Project))
	labels[catalystv1.LabelEnvironment] = LabelValue(SanitizePart(p.Environment))
	annotations := map[string]string{
		OwnerAnnotation:    Owner(env),
		OwnerUIDAnnotation: string(env.UID),
	}
	if p.Branch != "" {
		labels[catalystv1.LabelBranch] = LabelValue(p.Branch)
		annotations[catalystv1.AnnotationBranch] = p.Branch
	}
	if n := env.Spec.Source.PRNumber; n > 0 {
		annotations[catalystv1.AnnotationPRNumber] = fmt.Sprint(n)
	}
	// What the admission policies read (admissionpolicy.go): the label binds them to the namespace, the
	// annotations are the environment's host and ClusterIssuers. Tenants cannot change a namespace.
	labels[TenantNamespaceLabel] = "true"
	annotations[HostAnnotation] = strings.ToLower(Host(name, s.Domain))
	annotations[ClusterIssuersAnnotation] = strings.Join(s.ClusterIssuers, ",")
	labels[podSecurityEnforce] = string(s.PodSecurityLevel.OrRestricted())
	labels[podSecurityEnforceVersion] = "latest"
	labels[podSecurityAudit] = string(PodSecurityRestricted)
	labels[podSecurityWarn] = string(PodSecurityRestricted)
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
	}
}

// objectMeta is the metadata of a child inside the environment's namespace. No owner reference: an
// object cannot be owned across namespaces; it goes with the namespace.
func objectMeta(env *catalystv1.Environment, ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: oplabels.Labels(AppName, env.Name)}
}
