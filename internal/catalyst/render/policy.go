package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/platform-operator/platform-operator/internal/catalyst"
)

// Policy is what a deploy may hold: objects of the environment's namespace only, reachable only under the
// environment's host, and nothing that acts beyond the namespace through a controller (a load balancer, a
// ClusterIssuer, a mesh-wide Istio rule, an Endpoints object pointing a Service anywhere). It is the
// operator's second line: the first is the API server's RBAC, as the tenant's deploys are sent by a client
// impersonating a ServiceAccount of the namespace.
type Policy struct {
	// Namespace is the environment's namespace.
	Namespace string
	// Host is the environment's host, <namespace>.<domain>: every host name a rendered object serves or
	// asks a certificate for must be it or a name under it (a wildcard only as *.<a name under it or it>).
	Host string
	// Scope says which kinds are namespaced; a kind it errs on is not served by the cluster. It must be
	// set: with none, every object is refused.
	Scope Scope
	// ClusterIssuers are the cert-manager ClusterIssuers rendered objects may name; none when empty.
	ClusterIssuers []string
}

// Check returns, as Describe names them followed by the rule in parentheses, the objects p refuses, and
// sets the namespace on every namespaced object without one. Nothing should be sent when it refuses any.
func (p Policy) Check(objs []*unstructured.Unstructured) []string {
	return p.check(objs, true)
}

// boundaries is what Check refuses for the namespace boundary alone: objects outside the namespace and
// duplicates.
func (p Policy) boundaries(objs []*unstructured.Unstructured) []string {
	return p.check(objs, false)
}

// check is Check, with the rules beyond the namespace boundary only when content is true.
func (p Policy) check(objs []*unstructured.Unstructured, content bool) []string {
	var refused []string
	seen := map[string]bool{}
	for _, o := range objs {
		if why := p.boundary(o); why != "" {
			refused = append(refused, fmt.Sprintf("%s (%s)", Describe(o), why))
			continue
		}
		o.SetNamespace(p.Namespace)
		id := o.GroupVersionKind().GroupKind().String() + "/" + o.GetName()
		if seen[id] {
			refused = append(refused, fmt.Sprintf("%s (twice)", Describe(o)))
		}
		seen[id] = true
		if !content {
			continue
		}
		for _, why := range p.content(o) {
			refused = append(refused, fmt.Sprintf("%s (%s)", Describe(o), why))
		}
	}
	return refused
}

// boundary is why o is not an object of the environment's namespace, or "".
func (p Policy) boundary(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	if p.Scope == nil {
		return fmt.Sprintf("kind %s is not served by the cluster", gvk.GroupKind())
	}
	namespaced, err := p.Scope(gvk)
	switch {
	case err != nil:
		return fmt.Sprintf("kind %s is not served by the cluster", gvk.GroupKind())
	case !namespaced:
		return "cluster-scoped"
	case o.GetNamespace() != "" && o.GetNamespace() != p.Namespace:
		return fmt.Sprintf("namespace %s is not the environment's", o.GetNamespace())
	}
	return ""
}

// Group names of the kinds the rules look into.
const (
	groupNetworking   = "networking.k8s.io"
	groupGateway      = "gateway.networking.k8s.io"
	groupIstio        = "networking.istio.io"
	groupCertManager  = "cert-manager.io"
	groupACME         = "acme.cert-manager.io"
	groupRBAC         = "rbac.authorization.k8s.io"
	groupDiscovery    = "discovery.k8s.io"
	kindClusterIssuer = "ClusterIssuer"
)

// content is every rule o breaks besides the namespace boundary, each as the text inside the parentheses.
func (p Policy) content(o *unstructured.Unstructured) []string {
	gk := o.GroupVersionKind().GroupKind()
	if why := reserved(gk, o.GetName()); why != "" {
		return []string{why}
	}
	switch {
	case gk.Group == "" && gk.Kind == "Service":
		return service(o)
	case gk.Group == "" && gk.Kind == "Endpoints", gk.Group == groupDiscovery && gk.Kind == "EndpointSlice":
		return []string{"Endpoints point a Service at any address; let the Service's selector pick the pods"}
	case (gk.Group == groupNetworking || gk.Group == "extensions") && gk.Kind == "Ingress":
		return append(p.ingress(o), p.issuerAnnotations(o)...)
	case gk.Group == groupGateway:
		return p.gatewayAPI(o, gk.Kind)
	case gk.Group == groupIstio && (gk.Kind == "Gateway" || gk.Kind == "VirtualService" || gk.Kind == "DestinationRule"):
		return p.istio(o, gk.Kind)
	case gk.Group == "istio.io" || strings.HasSuffix(gk.Group, ".istio.io"):
		return []string{fmt.Sprintf("Istio %s changes the mesh's routing or policy beyond the namespace", gk.Kind)}
	case gk.Group == groupCertManager && gk.Kind == "Certificate":
		return p.certificate(o)
	case gk.Group == groupCertManager && gk.Kind == "CertificateRequest":
		if kind, name := issuerRef(o); clusterIssuerKind(kind) {
			return []string{fmt.Sprintf("a CertificateRequest signed by %s %s could hold any name; use a Certificate", kind, name)}
		}
	case gk.Group == groupACME:
		return []string{"cert-manager's own"}
	case gk.Group == groupRBAC && gk.Kind == "RoleBinding":
		return p.roleBinding(o)
	case gk.Group == "" && gk.Kind == "Secret":
		return tokenSecret(o)
	}
	if path, ok := podSpecs[gk]; ok {
		return append(tenantIdentity(o, path), hostPaths(o, path)...)
	}
	return nil
}

// tenantIdentity refuses a pod spec that runs as the ServiceAccount the operator impersonates: the pod's
// token (automountServiceAccountToken on the pod overrides the ServiceAccount's false, and a projected
// volume needs no automount at all) would let the application act as the operator's tenant identity, past
// this guard. serviceAccount is the deprecated alias the API server still honours.
func tenantIdentity(o *unstructured.Unstructured, path []string) []string {
	var out []string
	for _, field := range []string{"serviceAccountName", "serviceAccount"} {
		if name, _, _ := unstructured.NestedString(o.Object, append(slices.Clone(path), field)...); name == catalyst.TenantServiceAccountName {
			out = append(out, fmt.Sprintf("%s %s is the identity the operator deploys as: a pod running as it would hold the operator's rights in the namespace; run it as a ServiceAccount of its own",
				field, name))
		}
	}
	return out
}

// serviceAccountTokenType is the type of a Secret the token controller fills with a ServiceAccount's
// long-lived token.
const serviceAccountTokenType = "kubernetes.io/service-account-token"

// tokenSecret refuses a Secret that asks the token controller for a long-lived ServiceAccount token: for
// the operator's tenant identity it would hand the repository its deployer's credentials, and for any
// other it is a credential that outlives the pods (they get short-lived projected tokens).
func tokenSecret(o *unstructured.Unstructured) []string {
	if t, _, _ := unstructured.NestedString(o.Object, "type"); t != serviceAccountTokenType {
		return nil
	}
	sa := o.GetAnnotations()["kubernetes.io/service-account.name"]
	if sa == catalyst.TenantServiceAccountName {
		return []string{fmt.Sprintf("type %s for ServiceAccount %s would hand out the token of the identity the operator deploys as", serviceAccountTokenType, sa)}
	}
	return []string{fmt.Sprintf("type %s mints a long-lived token for ServiceAccount %q; pods get short-lived tokens of their own ServiceAccount", serviceAccountTokenType, sa)}
}

// reserved is why an object of kind gk named name is the operator's own, or "".
func reserved(gk schema.GroupKind, name string) string {
	switch {
	case gk == schema.GroupKind{Group: groupNetworking, Kind: "NetworkPolicy"}:
		return fmt.Sprintf("the operator's NetworkPolicy %s locks the namespace down", catalyst.NetworkPolicyName)
	case gk == schema.GroupKind{Kind: "ResourceQuota"}, gk == schema.GroupKind{Kind: "LimitRange"}:
		return fmt.Sprintf("the operator's %s %s locks the namespace down", gk.Kind, catalyst.QuotaName)
	case gk == schema.GroupKind{Group: groupNetworking, Kind: "Ingress"} && name == catalyst.IngressName,
		gk == schema.GroupKind{Group: groupCertManager, Kind: "Certificate"} && name == catalyst.CertificateName,
		gk == schema.GroupKind{Kind: "Secret"} && name == catalyst.TLSSecretName,
		gk == schema.GroupKind{Kind: "ServiceAccount"} && name == catalyst.TenantServiceAccountName,
		gk == schema.GroupKind{Group: groupRBAC, Kind: "RoleBinding"} && name == catalyst.TenantServiceAccountName:
		return "the operator's own"
	}
	return ""
}

// service refuses what exposes a Service outside the cluster's ingress, or points it anywhere.
func service(o *unstructured.Unstructured) []string {
	var out []string
	switch t, _, _ := unstructured.NestedString(o.Object, "spec", "type"); t {
	case "LoadBalancer", "NodePort":
		out = append(out, fmt.Sprintf("type %s opens a port outside the environment's ingress; use ClusterIP", t))
	case "ExternalName":
		out = append(out, "type ExternalName lets an Ingress reach any host")
	}
	ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
	for _, port := range ports {
		if pm, ok := port.(map[string]any); ok && pm["nodePort"] != nil && fmt.Sprint(pm["nodePort"]) != "0" {
			out = append(out, fmt.Sprintf("nodePort %v opens a port on every node", pm["nodePort"]))
		}
	}
	if ips, _, _ := unstructured.NestedSlice(o.Object, "spec", "externalIPs"); len(ips) > 0 {
		out = append(out, "externalIPs take traffic for addresses outside the cluster")
	}
	return out
}

// hostReason is why host h is not the environment's, or "".
func (p Policy) hostReason(h string) string {
	switch {
	case p.under(h):
		return ""
	case p.Host == "":
		return fmt.Sprintf("host %s: the environment has no host", h)
	}
	return fmt.Sprintf("host %s is not under %s", h, p.Host)
}

// under says whether h is p.Host or a name under it; a wildcard only as the whole first label.
func (p Policy) under(h string) bool {
	host := strings.ToLower(strings.TrimSuffix(p.Host, "."))
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if host == "" || h == "" {
		return false
	}
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		h = rest
	}
	if strings.Contains(h, "*") || strings.HasPrefix(h, ".") {
		return false
	}
	return h == host || strings.HasSuffix(h, "."+host)
}

// hosts adds the reasons of every host in list.
func (p Policy) hosts(out []string, list []string) []string {
	for _, h := range list {
		if why := p.hostReason(h); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// ingress checks an Ingress's hosts: every rule names one under the environment's, and so does TLS.
func (p Policy) ingress(o *unstructured.Unstructured) []string {
	var out []string
	for _, field := range []string{"defaultBackend", "backend"} {
		if _, found, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", field); found {
			out = append(out, fmt.Sprintf("spec.%s catches requests for every host; route from a rule with the environment's host", field))
		}
	}
	rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules")
	for _, r := range rules {
		rm, _ := r.(map[string]any)
		h, _ := rm["host"].(string)
		if h == "" {
			out = append(out, fmt.Sprintf("a rule without host catches every host; set host to %s", p.Host))
			continue
		}
		out = p.hosts(out, []string{h})
	}
	tls, _, _ := unstructured.NestedSlice(o.Object, "spec", "tls")
	for _, t := range tls {
		tm, _ := t.(map[string]any)
		out = p.hosts(out, stringList(tm["hosts"]))
	}
	for _, k := range slices.Sorted(maps.Keys(o.GetAnnotations())) {
		if strings.HasPrefix(k, "nginx.ingress.kubernetes.io/") && strings.HasSuffix(k, "-snippet") {
			out = append(out, fmt.Sprintf("annotation %s writes the shared ingress controller's configuration", k))
		}
	}
	return out
}

// gatewayAPI checks the hosts of Gateway API Gateways and routes.
func (p Policy) gatewayAPI(o *unstructured.Unstructured, kind string) []string {
	var out []string
	switch kind {
	case "Gateway":
		listeners, _, _ := unstructured.NestedSlice(o.Object, "spec", "listeners")
		for _, l := range listeners {
			lm, _ := l.(map[string]any)
			h, _ := lm["hostname"].(string)
			if h == "" {
				out = append(out, fmt.Sprintf("listener %v has no hostname and would take every host; set hostname to %s", lm["name"], p.Host))
				continue
			}
			out = p.hosts(out, []string{h})
		}
		out = append(out, p.issuerAnnotations(o)...)
	case "HTTPRoute", "GRPCRoute", "TLSRoute":
		names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "hostnames")
		if len(names) == 0 {
			out = append(out, fmt.Sprintf("spec.hostnames is empty, so the route would take every host of its Gateway; list %s", p.Host))
		}
		out = p.hosts(out, names)
	}
	return out
}

// istio checks the hosts of Istio Gateways and VirtualServices; DestinationRules are the namespace's.
func (p Policy) istio(o *unstructured.Unstructured, kind string) []string {
	var out []string
	switch kind {
	case "Gateway":
		servers, _, _ := unstructured.NestedSlice(o.Object, "spec", "servers")
		for _, s := range servers {
			sm, _ := s.(map[string]any)
			for _, h := range stringList(sm["hosts"]) {
				ns, host, found := strings.Cut(h, "/")
				if !found {
					ns, host = "", h
				}
				if ns != "" && ns != "." && ns != p.Namespace {
					out = append(out, fmt.Sprintf("host %s lets namespace %s bind to the Gateway; use %s/ or ./", h, ns, p.Namespace))
					continue
				}
				out = p.hosts(out, []string{host})
			}
		}
	case "VirtualService":
		hosts, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "hosts")
		for _, h := range hosts {
			if !p.serviceHost(h) {
				out = p.hosts(out, []string{h})
			}
		}
	}
	return out
}

// serviceHost says whether a VirtualService host names a Service of the environment's namespace: a short
// name (Istio reads it in the VirtualService's namespace) or <name>.<namespace>.svc[.cluster.local].
func (p Policy) serviceHost(h string) bool {
	if h != "" && !strings.ContainsAny(h, ".*") {
		return true
	}
	name, rest, _ := strings.Cut(h, ".")
	return name != "" && !strings.Contains(name, "*") &&
		(rest == p.Namespace+".svc" || rest == p.Namespace+".svc.cluster.local")
}

// certificate checks a cert-manager Certificate: names under the host, an allowed issuer.
func (p Policy) certificate(o *unstructured.Unstructured) []string {
	var out []string
	names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
	out = p.hosts(out, names)
	if cn, _, _ := unstructured.NestedString(o.Object, "spec", "commonName"); cn != "" {
		out = p.hosts(out, []string{cn})
	}
	kind, name := issuerRef(o)
	if why := p.clusterIssuer(kind, name); why != "" {
		return append(out, why)
	}
	if clusterIssuerKind(kind) {
		// A cluster-wide issuer vouches for more than DNS names: a URI SAN is a mesh identity.
		for _, field := range []string{"uris", "ipAddresses", "emailAddresses", "otherNames"} {
			if v, found, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", field); found && v != nil {
				out = append(out, fmt.Sprintf("spec.%s would be signed by %s %s; only dnsNames under %s", field, kind, name, p.Host))
			}
		}
	}
	return out
}

// issuerRef is the kind (qualified by its group when not cert-manager's) and name of o's spec.issuerRef.
func issuerRef(o *unstructured.Unstructured) (kind, name string) {
	ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "issuerRef")
	return qualifiedIssuerKind(ref["kind"], ref["group"]), ref["name"]
}

// qualifiedIssuerKind is kind (Issuer when empty) qualified by group unless the group is cert-manager's.
func qualifiedIssuerKind(kind, group string) string {
	if kind == "" {
		kind = "Issuer"
	}
	if group != "" && group != groupCertManager {
		return kind + "." + group
	}
	return kind
}

// clusterIssuerKind says whether an issuer kind is cluster-wide: cert-manager's ClusterIssuer, or an
// external issuer's cluster kind (by convention named *ClusterIssuer).
func clusterIssuerKind(kind string) bool {
	k, _, _ := strings.Cut(kind, ".")
	return strings.HasSuffix(k, kindClusterIssuer)
}

// clusterIssuer is why naming issuer kind/name is refused, or "".
func (p Policy) clusterIssuer(kind, name string) string {
	switch {
	case !clusterIssuerKind(kind):
		return ""
	case kind == kindClusterIssuer && slices.Contains(p.ClusterIssuers, name):
		return ""
	case kind == kindClusterIssuer:
		return fmt.Sprintf("ClusterIssuer %s is not one the environment may use%s", name, allowedList(p.ClusterIssuers))
	}
	return fmt.Sprintf("issuer %s %s is cluster-wide", kind, name)
}

func allowedList(names []string) string {
	if len(names) == 0 {
		return " (none is)"
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// issuerAnnotations checks cert-manager's ingress-shim annotations, which make it issue a certificate
// for an Ingress or a Gateway.
func (p Policy) issuerAnnotations(o *unstructured.Unstructured) []string {
	a := o.GetAnnotations()
	var out []string
	if name := a["cert-manager.io/cluster-issuer"]; name != "" {
		if why := p.clusterIssuer(kindClusterIssuer, name); why != "" {
			out = append(out, "annotation cert-manager.io/cluster-issuer: "+why)
		}
	}
	if name := a["cert-manager.io/issuer"]; name != "" {
		kind := qualifiedIssuerKind(a["cert-manager.io/issuer-kind"], a["cert-manager.io/issuer-group"])
		if why := p.clusterIssuer(kind, name); why != "" {
			out = append(out, "annotation cert-manager.io/issuer: "+why)
		}
	}
	return out
}

// roleBinding refuses bindings of ClusterRoles and of subjects beyond the namespace.
func (p Policy) roleBinding(o *unstructured.Unstructured) []string {
	var out []string
	if kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind"); kind != "Role" {
		name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		out = append(out, fmt.Sprintf("roleRef names %s %s; bind a Role of the namespace", kind, name))
	}
	subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
	for _, s := range subjects {
		sm, _ := s.(map[string]any)
		kind, _ := sm["kind"].(string)
		name, _ := sm["name"].(string)
		ns, _ := sm["namespace"].(string)
		switch {
		case kind == "ServiceAccount" && ns != "" && ns != p.Namespace:
			out = append(out, fmt.Sprintf("subject ServiceAccount %s/%s is of another namespace", ns, name))
		case kind == "User" && strings.HasPrefix(name, "system:serviceaccount:") && !strings.HasPrefix(name, "system:serviceaccount:"+p.Namespace+":"):
			out = append(out, fmt.Sprintf("subject User %s is of another namespace", name))
		case kind == "Group" && (name == "system:serviceaccounts" || name == "system:authenticated" || name == "system:unauthenticated"):
			out = append(out, fmt.Sprintf("subject Group %s holds every namespace's accounts", name))
		case kind == "Group" && strings.HasPrefix(name, "system:serviceaccounts:") && name != "system:serviceaccounts:"+p.Namespace:
			out = append(out, fmt.Sprintf("subject Group %s is of another namespace", name))
		}
	}
	return out
}

// podSpecs are where each workload kind keeps its pod spec.
var podSpecs = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:        {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:    {"spec", "jobTemplate", "spec", "template", "spec"},
	{Kind: "Pod"}:                        {"spec"},
	{Kind: "PodTemplate"}:                {"template", "spec"},
	{Kind: "ReplicationController"}:      {"spec", "template", "spec"},
}

// hostPaths refuses hostPath volumes (Pod Security's baseline level refuses them too, with a less
// telling message).
func hostPaths(o *unstructured.Unstructured, path []string) []string {
	volumes, _, _ := unstructured.NestedSlice(o.Object, append(slices.Clone(path), "volumes")...)
	var out []string
	for _, v := range volumes {
		vm, _ := v.(map[string]any)
		if _, ok := vm["hostPath"]; ok {
			out = append(out, fmt.Sprintf("volume %v is a hostPath: it reads the node's files", vm["name"]))
		}
	}
	return out
}

// stringList is a JSON list of strings (other entries skipped).
func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
