package homelab

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/admit"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The Domain webhook answers creation only: the hostname is immutable (CEL), so a claim is made once,
// and a webhook on updates with failurePolicy Fail would keep anyone from removing a deleted Domain's
// finalizer by hand while the operator is down. A changed issuer is checked by the controller. The
// AuthentikServer webhook answers creation and update (spec.domain may change); it holds no finalizer.
// +kubebuilder:webhook:path=/validate-homelab-mortenolsen-pro-v1-domain,mutating=false,failurePolicy=fail,sideEffects=None,groups=homelab.mortenolsen.pro,resources=domains,verbs=create,versions=v1,name=vdomain.homelab.mortenolsen.pro,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-homelab-mortenolsen-pro-v1-authentikserver,mutating=false,failurePolicy=fail,sideEffects=None,groups=homelab.mortenolsen.pro,resources=authentikservers,verbs=create;update,versions=v1,name=vauthentikserver.homelab.mortenolsen.pro,admissionReviewVersions=v1

// domainHostnameIndex indexes Domains by claimIndexValues: their hostname and its parent.
const domainHostnameIndex = "homelab.domain.hostname"

// overlappingClaims are the Domains other than d whose hostnames overlap d's and that the policy allows
// their namespaces (a Domain the policy refuses claims nothing, so that it cannot squat a name another
// namespace is allowed), read through reader by domainHostnameIndex.
func overlappingClaims(ctx context.Context, reader client.Reader, policy DomainPolicy, d *homelabv1.Domain) ([]homelabv1.Domain, error) {
	var out []homelabv1.Domain
	seen := map[client.ObjectKey]bool{client.ObjectKeyFromObject(d): true}
	for _, key := range claimIndexValues(d) {
		var list homelabv1.DomainList
		if err := reader.List(ctx, &list, client.MatchingFields{domainHostnameIndex: key}); err != nil {
			return nil, fmt.Errorf("list Domains by hostname %s: %w", key, err)
		}
		for _, o := range list.Items {
			k := client.ObjectKeyFromObject(&o)
			if seen[k] || !hostnamesOverlap(d.Spec.Hostname, o.Spec.Hostname) {
				continue
			}
			seen[k] = true
			if ok, _ := policy.Allows(o.Namespace, o.Spec.Hostname, o.Spec.Issuer); ok {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// liveOverlappingClaims is overlappingClaims read from the API server, which has no field index: every
// Domain is listed (a cluster holds few) and those whose hostnames overlap d's are kept.
func liveOverlappingClaims(ctx context.Context, reader client.Reader, policy DomainPolicy, d *homelabv1.Domain) ([]homelabv1.Domain, error) {
	var list homelabv1.DomainList
	if err := reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Domains: %w", err)
	}
	var out []homelabv1.Domain
	for _, o := range list.Items {
		if client.ObjectKeyFromObject(&o) == client.ObjectKeyFromObject(d) || !hostnamesOverlap(d.Spec.Hostname, o.Spec.Hostname) {
			continue
		}
		if ok, _ := policy.Allows(o.Namespace, o.Spec.Hostname, o.Spec.Issuer); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// takenMessage says which namespace holds what d asks for.
func takenMessage(d, owner *homelabv1.Domain) string {
	what := "hostname " + d.Spec.Hostname
	switch {
	case parentName(d.Spec.Hostname) == owner.Spec.Hostname:
		what = fmt.Sprintf("hostname %s, which the certificate of %s (*.%s) covers,", d.Spec.Hostname, owner.Spec.Hostname, owner.Spec.Hostname)
	case parentName(owner.Spec.Hostname) == d.Spec.Hostname:
		what = fmt.Sprintf("hostname %s (its certificate's *.%s would cover %s)", d.Spec.Hostname, d.Spec.Hostname, owner.Spec.Hostname)
	}
	return fmt.Sprintf("%s is already claimed by a Domain in namespace %s; a hostname and the names its wildcard covers belong to the first Domain that claims them", what, owner.Namespace)
}

// DomainValidator refuses a new Domain whose hostname the operator's policy does not allow its namespace,
// or that overlaps a Domain that exists already. It reads Domains from the manager's cache, so two
// Domains created in the same instant may both pass: the controller then makes only the older one's
// certificate and gateway, and gives the other HostnameTaken, as it does when the webhook is not
// installed.
type DomainValidator struct {
	// Reader lists Domains by domainHostnameIndex: the manager's cached client.
	Reader client.Reader
	// APIReader lists Domains from the API server when the cache shows no overlap: a Domain created a
	// moment before may not be in the cache yet, and must not lose its name for the cache's lag. Nil
	// reads the cache only.
	APIReader client.Reader
	// Policy is --homelab-domain-policy.
	Policy DomainPolicy
}

var _ admit.Validator[*homelabv1.Domain] = (*DomainValidator)(nil)

// ValidateCreate refuses a Domain the policy does not allow, or whose hostname is taken.
func (v *DomainValidator) ValidateCreate(ctx context.Context, d *homelabv1.Domain) (admission.Warnings, error) {
	d = admit.WithRequestNamespace(ctx, d)
	if ok, msg := v.Policy.Allows(d.Namespace, d.Spec.Hostname, d.Spec.Issuer); !ok {
		return nil, apierrors.NewForbidden(homelabv1.GroupVersion.WithResource("domains").GroupResource(), d.Name,
			fmt.Errorf("%s", msg))
	}
	others, err := overlappingClaims(ctx, v.Reader, v.Policy, d)
	if err == nil && len(others) == 0 && v.APIReader != nil {
		others, err = liveOverlappingClaims(ctx, v.APIReader, v.Policy, d)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if len(others) == 0 {
		return nil, nil
	}
	slices.SortFunc(others, func(a, b homelabv1.Domain) int {
		if claimsBefore(&a, &b) {
			return -1
		}
		return 1
	})
	return nil, apierrors.NewInvalid(homelabv1.GroupVersion.WithKind("Domain").GroupKind(), d.Name, field.ErrorList{
		field.Duplicate(field.NewPath("spec", "hostname"), takenMessage(d, &others[0])),
	})
}

// ValidateUpdate admits every update: the API server does not call it (the webhook is registered for
// creation only), and the controller checks a changed issuer.
func (v *DomainValidator) ValidateUpdate(context.Context, *homelabv1.Domain, *homelabv1.Domain) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete admits every deletion.
func (v *DomainValidator) ValidateDelete(context.Context, *homelabv1.Domain) (admission.Warnings, error) {
	return nil, nil
}

// AuthentikServerValidator refuses an AuthentikServer whose spec.domain names a Domain in another
// namespace that does not list the AuthentikServer's namespace in spec.allowedNamespaces, or does not
// exist there (the same answer, so that a tenant cannot probe another namespace for Domain names). The
// controller checks the reference again on every reconcile: a Domain may withdraw its allowance later.
type AuthentikServerValidator struct {
	// Reader reads Domains: the manager's cached client.
	Reader client.Reader
	// APIReader reads a Domain from the API server when the cache does not show it allowing the
	// AuthentikServer (a Domain created or allowed a moment before); nil reads the cache only.
	APIReader client.Reader
}

var _ admit.Validator[*homelabv1.AuthentikServer] = (*AuthentikServerValidator)(nil)

// ValidateCreate refuses a reference to a Domain that does not allow the AuthentikServer's namespace.
func (v *AuthentikServerValidator) ValidateCreate(ctx context.Context, a *homelabv1.AuthentikServer) (admission.Warnings, error) {
	return nil, v.validate(ctx, admit.WithRequestNamespace(ctx, a))
}

// ValidateUpdate checks spec.domain when it changed; an unchanged reference is left to the controller,
// so that a Domain withdrawing its allowance does not block edits of the AuthentikServer's labels, nor
// its deletion.
func (v *AuthentikServerValidator) ValidateUpdate(ctx context.Context, old, a *homelabv1.AuthentikServer) (admission.Warnings, error) {
	if old.Spec.Domain == a.Spec.Domain {
		return nil, nil
	}
	if !a.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return nil, v.validate(ctx, admit.WithRequestNamespace(ctx, a))
}

// ValidateDelete admits every deletion.
func (v *AuthentikServerValidator) ValidateDelete(context.Context, *homelabv1.AuthentikServer) (admission.Warnings, error) {
	return nil, nil
}

func (v *AuthentikServerValidator) validate(ctx context.Context, a *homelabv1.AuthentikServer) error {
	key := dependencyKey(a.Spec.Domain, a.Namespace)
	if key.Namespace == a.Namespace {
		return nil
	}
	ok, err := reconcile.Accepted(ctx, v.Reader, v.APIReader, key, func() *homelabv1.Domain { return &homelabv1.Domain{} },
		func(d *homelabv1.Domain) bool { return d != nil && domainAllowsNamespace(d, a.Namespace) })
	switch {
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("domain: %w", err))
	case ok:
		return nil
	}
	return apierrors.NewInvalid(homelabv1.GroupVersion.WithKind("AuthentikServer").GroupKind(), a.Name, field.ErrorList{
		field.Forbidden(field.NewPath("spec", "domain"), foreignDomainMessage(key.String(), a.Namespace)),
	})
}

// foreignDomainMessage says why a Domain of another namespace cannot be used: the same words whether the
// Domain exists or not.
func foreignDomainMessage(key, ns string) string {
	return fmt.Sprintf("Domain %s does not exist or does not list namespace %s in spec.allowedNamespaces; use a Domain of namespace %s, or ask the Domain's owners to add %s to its spec.allowedNamespaces",
		key, ns, ns, ns)
}
