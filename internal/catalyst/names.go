package catalyst

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// MaxNamespaceLength is the longest namespace name Kubernetes accepts (a DNS label).
const MaxNamespaceLength = 63

const (
	// truncatedPrefix is how much of a too-long joined name is kept before the hash suffix.
	truncatedPrefix = 57
	// hashLength is how many hex characters of the SHA-256 the suffix keeps.
	hashLength = 5
)

// SanitizePart is one namespace name part as the procedure makes it: lowercased, every run of
// characters outside [a-z0-9-] turned into one '-', repeated '-' collapsed, '-' trimmed at both ends.
func SanitizePart(s string) string {
	var b strings.Builder
	dash := false // the last byte written is '-'
	for _, r := range strings.ToLower(s) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
			dash = false
			continue
		}
		// '-' itself and every other character become one '-', collapsed with its neighbours.
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// NamespaceName is the namespace of an environment: the sanitized parts (empty ones dropped) joined with
// '-'; when that is longer than 63 characters, its first 57 characters without a trailing '-', then '-'
// and the first 5 hex characters of the SHA-256 of the whole joined string.
func NamespaceName(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = SanitizePart(p); p != "" {
			kept = append(kept, p)
		}
	}
	joined := strings.Join(kept, "-")
	if len(joined) <= MaxNamespaceLength {
		return joined
	}
	return shorten(joined)
}

// shorten is s cut to 57 characters without a trailing '-', then '-' and 5 hex characters of its hash.
func shorten(s string) string {
	sum := sha256.Sum256([]byte(s))
	return strings.TrimSuffix(s[:truncatedPrefix], "-") + "-" + hex.EncodeToString(sum[:])[:hashLength]
}

// LabelValue is s made a valid label value: every run of characters outside [A-Za-z0-9._-] becomes '-',
// the ends are trimmed to a letter or digit, and a value longer than 63 characters is shortened like a
// namespace name. feature/login becomes feature-login.
func LabelValue(s string) string {
	var b strings.Builder
	bad := false
	for _, r := range s {
		ok := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '-' || r == '_' || r == '.'
		if ok {
			b.WriteRune(r)
			bad = false
			continue
		}
		if !bad {
			b.WriteByte('-')
			bad = true
		}
	}
	v := strings.TrimFunc(b.String(), notAlphanumeric)
	if len(v) <= MaxNamespaceLength {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return strings.TrimRightFunc(v[:truncatedPrefix], notAlphanumeric) + "-" + hex.EncodeToString(sum[:])[:hashLength]
}

func notAlphanumeric(r rune) bool {
	return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9')
}

// Reserved says whether ns is a namespace the operator never makes, labels or deletes for an environment,
// whoever asks: default, kube-* and openshift-* (and openshift itself).
func Reserved(ns string) bool {
	return ns == "default" || ns == "openshift" || strings.HasPrefix(ns, "kube-") || strings.HasPrefix(ns, "openshift-")
}

// Parts are what an environment's namespace and labels are made of.
type Parts struct {
	// Team is the catalyst.dev/team label, or else the Project's namespace.
	Team string
	// Project is the catalyst.dev/project label, or else spec.projectRef.name.
	Project string
	// Environment is the catalyst.dev/environment label, or else the Environment's name.
	Environment string
	// ProjectNamespace is where the Project is looked up: spec.projectRef.namespace, or else the
	// Environment's own namespace. Never the team label: a label any tenant writes must not lead to
	// another team's namespace (a Project there must allow the Environment's namespace, ProjectAllows).
	ProjectNamespace string
	// Branch is spec.source.branch, or else the catalyst.dev/branch label (which cannot hold a '/').
	Branch string
}

// PartsOf reads an environment's parts from its labels, falling back to its spec and metadata.
func PartsOf(env *catalystv1.Environment) Parts {
	l := env.Labels
	p := Parts{Team: l[catalystv1.LabelTeam], Project: l[catalystv1.LabelProject],
		Environment: l[catalystv1.LabelEnvironment], Branch: l[catalystv1.LabelBranch]}
	p.ProjectNamespace = env.Namespace
	if env.Spec.ProjectRef.Namespace != "" {
		p.ProjectNamespace = env.Spec.ProjectRef.Namespace
	}
	if SanitizePart(p.Team) == "" {
		p.Team = p.ProjectNamespace
	}
	if SanitizePart(p.Project) == "" {
		p.Project = env.Spec.ProjectRef.Name
	}
	if SanitizePart(p.Environment) == "" {
		p.Environment = env.Name
	}
	if env.Spec.Source.Branch != "" {
		p.Branch = env.Spec.Source.Branch
	}
	return p
}

// ProjectAllows says whether Environments of namespace envNamespace may use Project p: those of the
// Project's own namespace always, those of another namespace only when p lists it in
// spec.allowedEnvironmentNamespaces. A nil Project (not found) allows no other namespace.
func ProjectAllows(p *catalystv1.Project, envNamespace string) bool {
	if p == nil {
		return false
	}
	return p.Namespace == envNamespace || slices.Contains(p.Spec.AllowedEnvironmentNamespaces, envNamespace)
}

// Namespace is the environment's namespace name.
func (p Parts) Namespace() string { return NamespaceName(p.Team, p.Project, p.Environment) }

// Host is an environment's host name: its namespace, a DNS label without dots, as the first label under
// domain. Two environments with different namespaces therefore never share a host, whatever their
// domains.
func Host(namespace, domain string) string { return namespace + "." + domain }
