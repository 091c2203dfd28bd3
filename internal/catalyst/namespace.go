package catalyst

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/manager"
)

// AppName is the app.kubernetes.io/name of everything the operator makes for an environment.
const AppName = "catalyst"

// Ownership annotations on a namespace the operator made for an Environment. A Namespace is cluster-scoped
// and cannot carry an owner reference to a namespaced Environment, so these (with the managed-by label)
// are what makes it the Environment's: the operator changes and deletes only a namespace whose
// OwnerUIDAnnotation is the Environment's UID.
var (
	// OwnerAnnotation is the Environment's namespace/name.
	OwnerAnnotation = manager.Annotation("catalyst-environment")
	// OwnerUIDAnnotation is the Environment's UID.
	OwnerUIDAnnotation = manager.Annotation("catalyst-environment-uid")
)

// Pod Security admission labels: every environment namespace enforces the restricted profile.
const (
	podSecurityEnforce        = "pod-security.kubernetes.io/enforce"
	podSecurityEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	podSecurityAudit          = "pod-security.kubernetes.io/audit"
	podSecurityWarn           = "pod-security.kubernetes.io/warn"
	podSecurityRestricted     = "restricted"
)

// Owner is the value of OwnerAnnotation for env.
func Owner(env *catalystv1.Environment) string { return env.Namespace + "/" + env.Name }

// OwnedBy says whether ns was made by the operator for the Environment with uid.
func OwnedBy(ns *corev1.Namespace, uid types.UID) bool {
	return manager.IsManaged(ns.Labels) && uid != "" && ns.Annotations[OwnerUIDAnnotation] == string(uid)
}

// OwnerOf describes whose ns is, for a conflict message.
func OwnerOf(ns *corev1.Namespace) string {
	if !manager.IsManaged(ns.Labels) || ns.Annotations[OwnerUIDAnnotation] == "" {
		return "was not made by the operator"
	}
	return fmt.Sprintf("was made by the operator for Environment %s (uid %s)", ns.Annotations[OwnerAnnotation], ns.Annotations[OwnerUIDAnnotation])
}

// Namespace is the environment's namespace, named name: the catalyst.dev labels with label-safe values
// (the raw branch in an annotation), the operator's labels, the Pod Security restricted profile, and the
// ownership annotations.
func Namespace(env *catalystv1.Environment, p Parts, name string) *corev1.Namespace {
	labels := manager.Labels(AppName, env.Name)
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
	labels[podSecurityEnforce] = podSecurityRestricted
	labels[podSecurityEnforceVersion] = "latest"
	labels[podSecurityAudit] = podSecurityRestricted
	labels[podSecurityWarn] = podSecurityRestricted
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
	}
}

// objectMeta is the metadata of a child inside the environment's namespace. No owner reference: an
// object cannot be owned across namespaces; it goes with the namespace.
func objectMeta(env *catalystv1.Environment, ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: manager.Labels(AppName, env.Name)}
}
