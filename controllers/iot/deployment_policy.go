package iot

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/kit/nspolicy"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The operator flags of the iot tenancy and image policy (docs/iot.md, "Tenancy and image policy").
const (
	// FlagFleetPolicy says which devices each namespace's Deployments may target (ParseFleetPolicy).
	FlagFleetPolicy = "iot-fleet-policy"
	// FlagAllowedRegistries lists the registries (or registry path prefixes) images may come from
	// (ParseRegistries).
	FlagAllowedRegistries = "iot-allowed-registries"
	// FlagRequireDigest makes every image be pinned by digest (@sha256:...).
	FlagRequireDigest = "iot-require-digest"
	// FlagFleetAccountJWT is the fleet account's JWT, which says whose credential labels to trust.
	FlagFleetAccountJWT = "iot-fleet-account-jwt"
)

// Policy is what the administrator lets Deployments do: which devices each namespace may target, and
// which images may run on them. The webhook refuses a Deployment outside it; the controller publishes
// nothing for one stored before the policy changed.
type Policy struct {
	// Fleet is --iot-fleet-policy.
	Fleet FleetPolicy
	// Images is --iot-allowed-registries and --iot-require-digest.
	Images ImagePolicy
}

// Violations are the reasons d is outside the policy, one per refused selector or image; none when it is
// within. A targetSelector that does not parse is left to the controller's InvalidSelector (it selects
// nothing, and so publishes nothing).
func (p Policy) Violations(d *iotv1.Deployment) []string {
	var out []string
	if _, err := metav1.LabelSelectorAsSelector(&d.Spec.TargetSelector); err == nil {
		if ok, msg := p.Fleet.Allows(d.Namespace, &d.Spec.TargetSelector); !ok {
			out = append(out, msg)
		}
	}
	if d.Spec.Score.PodmanV0 != nil {
		for _, svc := range d.Spec.Score.PodmanV0.Services {
			if msg := p.Images.Check(svc.Image); msg != "" {
				out = append(out, fmt.Sprintf("service %s: %s", svc.Name, msg))
			}
		}
	}
	return out
}

// FleetPolicy is --iot-fleet-policy: for each namespace, the device labels its Deployments' selectors
// must be bounded by. The zero policy allows no targeting at all: on a fleet shared by teams, a namespace
// editor must not reach every device until the administrator says which.
type FleetPolicy struct {
	rules []fleetRule
}

// fleetRule is one entry: namespace (or "*") may target devices whose label key has one of values, or
// every device when all.
type fleetRule struct {
	text      string
	namespace string
	all       bool
	key       string
	values    []string
}

// ParseFleetPolicy reads --iot-fleet-policy: entries separated by ";", each NAMESPACE=KEY:VALUE|VALUE
// (the namespace's Deployments may target only devices whose label KEY is one of the VALUEs: their
// selector must require it, with matchLabels or an In expression) or NAMESPACE=* (any selector, including
// {}, every device). NAMESPACE is a namespace or "*"; a namespace that some entry names gets those entries
// (any one of them allowing is enough), every other namespace gets the "*" entries. Blanks around the
// separators are ignored; an empty string allows no targeting at all.
func ParseFleetPolicy(s string) (FleetPolicy, error) {
	const syntax = "NAMESPACE=KEY:VALUE|VALUE or NAMESPACE=*"
	var p FleetPolicy
	err := nspolicy.Parse(FlagFleetPolicy, syntax, s, func(e nspolicy.Entry) error {
		r := fleetRule{namespace: e.Namespace}
		if e.Value == nspolicy.Any {
			r.all = true
			r.text = r.namespace + "=*"
			p.rules = append(p.rules, r)
			return nil
		}
		key, values, ok := strings.Cut(e.Value, ":")
		r.key = strings.TrimSpace(key)
		if !ok || len(validation.IsQualifiedName(r.key)) > 0 {
			return e.Errorf("want NAMESPACE=KEY:VALUE|VALUE with KEY a label key, or NAMESPACE=*")
		}
		var err error
		r.values, err = e.List(values, func(v string) bool {
			return v != "" && len(validation.IsValidLabelValue(v)) == 0
		}, "%q is not a label value")
		if err != nil {
			return err
		}
		r.text = r.namespace + "=" + r.key + ":" + strings.Join(r.values, "|")
		p.rules = append(p.rules, r)
		return nil
	})
	if err != nil {
		return FleetPolicy{}, err
	}
	return p, nil
}

// TrustedKeys are the label keys whose values only a device's credential may give, for the
// Deployments of namespace ns: the keys of the rules that apply to it, none when one of them allows
// any selector (docs/fleet.md, "Credential labels").
func (p FleetPolicy) TrustedKeys(ns string) []string {
	var keys []string
	for _, r := range p.rulesFor(ns) {
		if r.all {
			return nil
		}
		if !slices.Contains(keys, r.key) {
			keys = append(keys, r.key)
		}
	}
	return keys
}

// rulesFor are the entries that apply to namespace ns: those naming it, else those for "*".
func (p FleetPolicy) rulesFor(ns string) []fleetRule {
	var named, wildcard []fleetRule
	for _, r := range p.rules {
		switch r.namespace {
		case ns:
			named = append(named, r)
		case "*":
			wildcard = append(wildcard, r)
		}
	}
	if len(named) > 0 {
		return named
	}
	return wildcard
}

// Allows says whether a Deployment in namespace ns may have selector sel; when it may not, the message
// names the rules that apply and what they require, for the webhook's refusal and the condition.
func (p FleetPolicy) Allows(ns string, sel *metav1.LabelSelector) (bool, string) {
	rules := p.rulesFor(ns)
	if len(rules) == 0 {
		return false, fmt.Sprintf("the operator's --%s has no rule for namespace %s: its Deployments may target no device; ask the cluster administrator", FlagFleetPolicy, ns)
	}
	var wants []string
	for _, r := range rules {
		if r.all || bounds(sel, r.key, r.values) {
			return true, ""
		}
		wants = append(wants, fmt.Sprintf("rule %q requires label %s to be one of %s (matchLabels, or an In expression with only those values)",
			r.text, r.key, strings.Join(r.values, ", ")))
	}
	what := "targetSelector"
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		what = "targetSelector {} (every device of the fleet)"
	}
	return false, fmt.Sprintf("%s is outside the operator's --%s for namespace %s: %s", what, FlagFleetPolicy, ns, strings.Join(wants, "; "))
}

// bounds says whether every device sel selects has label key with one of values: sel requires key to
// equal one of them (matchLabels), or to be in a non-empty subset of them (an In expression). The
// requirements of a selector are ANDed, so one such requirement is enough whatever the others say.
func bounds(sel *metav1.LabelSelector, key string, values []string) bool {
	if v, ok := sel.MatchLabels[key]; ok && slices.Contains(values, v) {
		return true
	}
	for _, e := range sel.MatchExpressions {
		if e.Key != key || e.Operator != metav1.LabelSelectorOpIn || len(e.Values) == 0 {
			continue
		}
		if !slices.ContainsFunc(e.Values, func(v string) bool { return !slices.Contains(values, v) }) {
			return true
		}
	}
	return false
}

// ImagePolicy is --iot-allowed-registries and --iot-require-digest: where the images of Deployments may
// come from, and whether they must be pinned by digest.
type ImagePolicy struct {
	// Registries are the allowed registries, each a host (every port of it), host:port, or a host with a
	// path prefix (registry.example.com/team); empty allows any.
	Registries []string
	// RequireDigest refuses an image not pinned by digest (@sha256:...).
	RequireDigest bool
}

// ParseRegistries reads --iot-allowed-registries: comma-separated registries, each a host, host:port or
// host/path prefix, lowercase. Docker Hub images are docker.io/<namespace>/<name> (docker.io/library for
// official images without a namespace), so docker.io/library allows only those.
func ParseRegistries(s string) ([]string, error) {
	var out []string
	for r := range strings.SplitSeq(s, ",") {
		r = strings.TrimSuffix(strings.TrimSpace(r), "/")
		if r == "" {
			continue
		}
		host, path, _ := strings.Cut(r, "/")
		if !hostRE.MatchString(host) || (path != "" && !pathRE.MatchString(path)) {
			return nil, fmt.Errorf("--%s: %q is not a registry host, host:port or host/path prefix", FlagAllowedRegistries, r)
		}
		out = append(out, r)
	}
	return out, nil
}

var (
	hostRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?$`)
	pathRE   = regexp.MustCompile(`^[a-z0-9]+([._/-][a-z0-9]+)*$`)
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// imageRef is an image reference taken apart the way podman and docker read it.
type imageRef struct {
	host   string // docker.io when the reference names no registry
	path   string // the repository path on host (library/nginx for nginx)
	digest string
}

// parseImage splits ref into registry host, repository path and digest. The first component is the
// registry when it has a dot or a port or is localhost; otherwise the image is Docker Hub's.
func parseImage(ref string) (imageRef, error) {
	var r imageRef
	name, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if !digestRE.MatchString(digest) {
			return r, fmt.Errorf("image %q: digest %q is not sha256:<64 lowercase hexadecimal digits>", ref, digest)
		}
		r.digest = digest
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i] // the tag
	}
	first, rest, hasSlash := strings.Cut(name, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		r.host, r.path = strings.ToLower(first), rest
	} else {
		r.host, r.path = "docker.io", name
		if !hasSlash {
			r.path = "library/" + name
		}
	}
	if r.path == "" || !pathRE.MatchString(r.path) {
		return r, fmt.Errorf("image %q: %q is not a repository path", ref, r.path)
	}
	return r, nil
}

// allowedBy says whether the image comes from registry entry: the same host (any port when the entry
// names none) and, when the entry has a path, a repository at or below it.
func (r imageRef) allowedBy(entry string) bool {
	host, path, _ := strings.Cut(entry, "/")
	imgHost := r.host
	if !strings.Contains(host, ":") {
		imgHost, _, _ = strings.Cut(imgHost, ":")
	}
	if imgHost != host {
		return false
	}
	return path == "" || r.path == path || strings.HasPrefix(r.path, path+"/")
}

// Check says why image is outside the policy, or "" when it is within.
func (p ImagePolicy) Check(image string) string {
	if len(p.Registries) == 0 && !p.RequireDigest {
		return ""
	}
	ref, err := parseImage(image)
	if err != nil {
		return err.Error()
	}
	if len(p.Registries) > 0 && !slices.ContainsFunc(p.Registries, ref.allowedBy) {
		return fmt.Sprintf("image %s (registry %s, repository %s) is not from a registry the operator's --%s allows (%s)",
			image, ref.host, ref.path, FlagAllowedRegistries, strings.Join(p.Registries, ", "))
	}
	if p.RequireDigest && ref.digest == "" {
		return fmt.Sprintf("image %s is not pinned by digest: the operator's --%s wants <image>@sha256:<digest>", image, FlagRequireDigest)
	}
	return ""
}

// refusePolicy is the reconcile of a Deployment outside the policy (msgs say why): nothing is published
// or withdrawn (devices keep what they were given, as with spec.paused; deleting the Deployment withdraws
// it), Progressing and Ready say PolicyViolation, and a Warning event says why once per message.
func (r *DeploymentReconciler) refusePolicy(ctx context.Context, d *iotv1.Deployment, st *store.Store, msgs []string) (ctrl.Result, error) {
	s := r.newDeploymentScope(d, st)
	return reconcile.Finish(ctx, r.status, s, func() *iotv1.DeploymentStatus {
		s.setPaused()
		s.status.ObservedGeneration = d.Generation
		return s.status
	}, refused("outside the operator's policy, nothing is published (devices keep what they were given): "+strings.Join(msgs, "; ")))
}

// refused is the one step of a Deployment outside the policy: Progressing and Ready False with msg, and
// Available Unknown when nothing was ever published.
func refused(msg string) reconcile.Step[*deploymentScope] {
	return func(_ context.Context, s *deploymentScope) (ctrl.Result, error) {
		// WarnOnce (Refuse's rule), not Fail's: a Deployment edited from one violation to another keeps
		// the reason, and the new message (what to fix now) is worth a Warning of its own.
		s.WarnOnce(iotv1.ConditionReady, iotv1.ReasonPolicyViolation, msg)
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonPolicyViolation, msg)
		s.Set(iotv1.ConditionReady, metav1.ConditionFalse, iotv1.ReasonPolicyViolation, msg)
		if c := meta.FindStatusCondition(s.Before, iotv1.ConditionAvailable); c == nil {
			s.Set(iotv1.ConditionAvailable, metav1.ConditionUnknown, iotv1.ReasonPolicyViolation, "nothing was published for this Deployment")
		}
		return ctrl.Result{}, nil
	}
}
