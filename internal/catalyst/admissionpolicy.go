package catalyst

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// What the API server enforces in every environment namespace, for whoever sends the request: the
// operator's tenant identity, a pod's ServiceAccount, a person. The operator's render guard
// (render.Policy) checks the same rules on a repository's objects first and words the refusal for the
// repository; these ValidatingAdmissionPolicies are the boundary, as they hold for requests that never
// pass the operator.
//
// They read the environment from its namespace, whose labels and annotations only the operator (and the
// cluster's administrators) may change: the tenant ClusterRole grants nothing on namespaces.
var (
	// TenantNamespaceLabel ("true") marks an environment's namespace: the policies' bindings select the
	// namespaces that carry it.
	TenantNamespaceLabel = oplabels.Annotation("catalyst-tenant")
	// HostAnnotation is the environment's host on its namespace: every host name an object of the
	// namespace serves or asks a certificate for must be it or a name under it.
	HostAnnotation = oplabels.Annotation("catalyst-host")
	// ClusterIssuersAnnotation lists, comma-separated, the cert-manager ClusterIssuers objects of the
	// namespace may name.
	ClusterIssuersAnnotation = oplabels.Annotation("catalyst-cluster-issuers")
)

// The policies, each bound under its own name by a binding of the same name. The names are fixed: the
// operator's ClusterRole may write only these (resourceNames in admissionpolicy RBAC markers).
const (
	// PolicyHosts holds Ingresses, Gateway API Gateways and routes, and cert-manager Certificates to the
	// namespace's host and ClusterIssuers, and refuses ingress-nginx snippet annotations.
	PolicyHosts = "platform-operator-catalyst-hosts"
	// PolicyServices refuses Services that open ports outside the cluster's ingress or point anywhere.
	PolicyServices = "platform-operator-catalyst-services"
	// PolicyIdentity refuses pods and pod templates that run as the tenant ServiceAccount, and
	// service-account-token Secrets for it.
	PolicyIdentity = "platform-operator-catalyst-identity"
)

// PolicyNames are the names of every policy and binding AdmissionPolicies returns.
var PolicyNames = []string{PolicyHosts, PolicyServices, PolicyIdentity}

// AdmissionPolicies are the ValidatingAdmissionPolicies and their bindings (binding after policy) that
// make the API server enforce, in every namespace labelled TenantNamespaceLabel, what the render guard
// checks. Rules on kinds the cluster does not serve (Gateway API, cert-manager) are accepted by the API
// server and match nothing until the kind is installed.
func AdmissionPolicies() []client.Object {
	var out []client.Object
	for _, p := range []*admissionregistrationv1.ValidatingAdmissionPolicy{hostsPolicy(), servicesPolicy(), identityPolicy()} {
		out = append(out, p, binding(p.Name))
	}
	return out
}

// Expressions the policies share.
const (
	// annotationsOf is the annotations of the namespace, or an empty map.
	nsAnnotations = `has(namespaceObject.metadata.annotations) ? namespaceObject.metadata.annotations : {}`
	// hostValid: a host that is not a DNS name (or none) allows no name at all.
	hostValidExpr = `variables.host.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$')`
	// hostPattern matches the host and names under it, with a wildcard only as the whole first label and
	// an optional trailing dot (host names are DNS names: their dots are the only characters to escape).
	hostPatternExpr = `'^(\\*\\.)?([-a-z0-9_]+\\.)*' + variables.host.replace('.', '\\.') + '\\.?$'`
	// objAnnotations is the object's annotations, or an empty map.
	objAnnotations = `has(object.metadata.annotations) ? object.metadata.annotations : {}`
)

// under is a CEL expression: host name h (an expression) is the environment's host or a name under it.
func under(h string) string {
	return fmt.Sprintf(`(variables.hostValid && string(%s).lowerAscii().matches(variables.hostPattern))`, h)
}

// notUnder is a CEL expression listing, comma-separated, the names of list expression l that are not
// under the host (for a message).
func notUnder(l string) string {
	return fmt.Sprintf(`%s.filter(h, !%s).join(', ')`, l, under("h"))
}

// hostMessage is the messageExpression of a refused host list: what is refused, and what is allowed.
func hostMessage(what, l string) string {
	return fmt.Sprintf(`'%s ' + %s + ' not under the environment\'s host ' + (variables.host == '' ? '(the namespace has none)' : variables.host) + ' (platform-operator catalyst: only names under the namespace\'s host)'`,
		what, notUnder(l))
}

// tlsMessage is the messageExpression of refused Ingress TLS hosts.
func tlsMessage() string {
	return `'Ingress TLS host ' + object.spec.tls.filter(t, has(t.hosts)).map(t, ` + notUnder("t.hosts") + `).filter(s, s != '').join(', ') + ` +
		`' not under the environment\'s host ' + (variables.host == '' ? '(the namespace has none)' : variables.host) + ' (platform-operator catalyst: only names under the namespace\'s host)'`
}

// issuerAllowed is a CEL expression: issuer kind k of group g named n may be used by the namespace's
// objects. A namespaced Issuer is the namespace's own; a ClusterIssuer only when listed; any other
// cluster-wide kind (an external issuer's *ClusterIssuer) never.
func issuerAllowed(k, g, n string) string {
	return fmt.Sprintf(`(!string(%[1]s).endsWith('ClusterIssuer') || (string(%[1]s) == 'ClusterIssuer' && string(%[2]s) in ['', 'cert-manager.io'] && string(%[3]s) in variables.issuers))`, k, g, n)
}

// issuersMessage names the allowed ClusterIssuers.
const issuersMessage = `' (allowed: ' + (size(variables.issuers) == 0 ? 'none' : variables.issuers.join(', ')) + ')'`

// namespaceVariables are the environment's host and ClusterIssuers, read from its namespace.
func namespaceVariables() []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		{Name: "nsAnnotations", Expression: nsAnnotations},
		{Name: "host", Expression: fmt.Sprintf(`'%[1]s' in variables.nsAnnotations ? variables.nsAnnotations['%[1]s'].lowerAscii() : ''`, HostAnnotation)},
		{Name: "hostValid", Expression: hostValidExpr},
		{Name: "hostPattern", Expression: hostPatternExpr},
		{Name: "issuers", Expression: fmt.Sprintf(`('%[1]s' in variables.nsAnnotations ? variables.nsAnnotations['%[1]s'] : '').split(',').map(s, s.trim()).filter(s, s != '')`, ClusterIssuersAnnotation)},
		{Name: "annotations", Expression: objAnnotations},
	}
}

// isKind is a CEL condition on the request's group and kind.
func isKind(group string, kinds ...string) string {
	return fmt.Sprintf(`(request.kind.group == '%s' && request.kind.kind in ['%s'])`, group, strings.Join(kinds, "', '"))
}

// when is a validation that holds only for requests matching cond.
func when(cond, expr, message string) admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{Expression: fmt.Sprintf("!%s || (%s)", cond, expr), MessageExpression: message,
		Reason: ptr.To(metav1.StatusReasonForbidden)}
}

func hostsPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	ingress := isKind("networking.k8s.io", "Ingress")
	gateway := isKind("gateway.networking.k8s.io", "Gateway")
	route := isKind("gateway.networking.k8s.io", "HTTPRoute", "GRPCRoute", "TLSRoute")
	cert := isKind("cert-manager.io", "Certificate")
	issuerAnnotations := []admissionregistrationv1.Validation{
		when(fmt.Sprintf("(%s || %s)", ingress, gateway),
			`!('cert-manager.io/cluster-issuer' in variables.annotations) || `+issuerAllowed(`'ClusterIssuer'`, `''`, `variables.annotations['cert-manager.io/cluster-issuer']`),
			`'annotation cert-manager.io/cluster-issuer: ClusterIssuer ' + variables.annotations['cert-manager.io/cluster-issuer'] + ' is not one the environment may use'`+"+"+issuersMessage),
		when(fmt.Sprintf("(%s || %s)", ingress, gateway),
			`!('cert-manager.io/issuer' in variables.annotations) || `+issuerAllowed(
				`('cert-manager.io/issuer-kind' in variables.annotations ? variables.annotations['cert-manager.io/issuer-kind'] : 'Issuer')`,
				`('cert-manager.io/issuer-group' in variables.annotations ? variables.annotations['cert-manager.io/issuer-group'] : '')`,
				`variables.annotations['cert-manager.io/issuer']`),
			`'annotation cert-manager.io/issuer: ' + variables.annotations['cert-manager.io/issuer'] + ' is a cluster-wide issuer the environment may not use'`+"+"+issuersMessage),
	}
	validations := []admissionregistrationv1.Validation{
		when(ingress, `!has(object.spec.defaultBackend)`,
			`'spec.defaultBackend catches requests for every host; route from a rule with host ' + variables.host`),
		when(ingress, `!has(object.spec.rules) || object.spec.rules.all(r, has(r.host))`,
			`'a rule without host catches every host; set host to ' + variables.host`),
		when(ingress, `!has(object.spec.rules) || object.spec.rules.all(r, !has(r.host) || `+under("r.host")+`)`,
			hostMessage("Ingress host", `object.spec.rules.filter(r, has(r.host)).map(r, r.host)`)),
		when(ingress, `!has(object.spec.tls) || object.spec.tls.all(t, !has(t.hosts) || t.hosts.all(h, `+under("h")+`))`,
			tlsMessage()),
		when(ingress, `!variables.annotations.exists(k, k.startsWith('nginx.ingress.kubernetes.io/') && k.endsWith('-snippet'))`,
			`'annotation ' + variables.annotations.filter(k, k.startsWith('nginx.ingress.kubernetes.io/') && k.endsWith('-snippet')).join(', ') + ' writes the shared ingress controller\'s configuration'`),
		when(gateway, `object.spec.listeners.all(l, has(l.hostname))`,
			`'a listener without hostname takes every host; set hostname to ' + variables.host`),
		when(gateway, `object.spec.listeners.all(l, !has(l.hostname) || `+under("l.hostname")+`)`,
			hostMessage("Gateway listener hostname", `object.spec.listeners.filter(l, has(l.hostname)).map(l, l.hostname)`)),
		when(route, `has(object.spec.hostnames) && size(object.spec.hostnames) > 0`,
			`'spec.hostnames is empty, so the route would take every host of its Gateway; list ' + variables.host`),
		when(route, `!has(object.spec.hostnames) || object.spec.hostnames.all(h, `+under("h")+`)`,
			hostMessage("route hostname", `object.spec.hostnames`)),
		when(cert, `!has(object.spec.dnsNames) || object.spec.dnsNames.all(h, `+under("h")+`)`,
			hostMessage("Certificate dnsName", `object.spec.dnsNames`)),
		when(cert, `!has(object.spec.commonName) || `+under("object.spec.commonName"),
			hostMessage("Certificate commonName", `[object.spec.commonName]`)),
		when(cert, issuerAllowed(`variables.issuerKind`, `variables.issuerGroup`, `object.spec.issuerRef.name`),
			`'issuerRef ' + variables.issuerKind + ' ' + object.spec.issuerRef.name + ' is not an issuer the environment may use'`+"+"+issuersMessage),
		when(cert, `!variables.issuerKind.endsWith('ClusterIssuer') || !(has(object.spec.uris) || has(object.spec.ipAddresses) || has(object.spec.emailAddresses) || has(object.spec.otherNames))`,
			`'a cluster-wide issuer signs only dnsNames under ' + variables.host + ' for the environment: no uris, ipAddresses, emailAddresses or otherNames'`),
	}
	vars := append(namespaceVariables(),
		admissionregistrationv1.Variable{Name: "issuerKind", Expression: `has(object.spec.issuerRef) && has(object.spec.issuerRef.kind) && object.spec.issuerRef.kind != '' ? object.spec.issuerRef.kind : 'Issuer'`},
		admissionregistrationv1.Variable{Name: "issuerGroup", Expression: `has(object.spec.issuerRef) && has(object.spec.issuerRef.group) ? object.spec.issuerRef.group : ''`},
	)
	return policy(PolicyHosts, []admissionregistrationv1.NamedRuleWithOperations{
		rule("networking.k8s.io", "ingresses"),
		rule("gateway.networking.k8s.io", "gateways", "httproutes", "grpcroutes", "tlsroutes"),
		rule("cert-manager.io", "certificates"),
	}, vars, append(validations, issuerAnnotations...))
}

func servicesPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return policy(PolicyServices, []admissionregistrationv1.NamedRuleWithOperations{rule("", "services")}, nil,
		[]admissionregistrationv1.Validation{
			{Expression: `!has(object.spec.type) || !(object.spec.type in ['LoadBalancer', 'NodePort', 'ExternalName'])`,
				MessageExpression: `'type ' + object.spec.type + (object.spec.type == 'ExternalName' ? ' lets an Ingress reach any host' : ' opens a port outside the environment\'s ingress; use ClusterIP')`,
				Reason:            ptr.To(metav1.StatusReasonForbidden)},
			{Expression: `!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0`,
				Message: "externalIPs take traffic for addresses outside the cluster", Reason: ptr.To(metav1.StatusReasonForbidden)},
		})
}

func identityPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	podKinds := []string{"Pod", "PodTemplate", "ReplicationController", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}
	pod := fmt.Sprintf(`(request.kind.kind in ['%s'])`, strings.Join(podKinds, "', '"))
	secret := isKind("", "Secret")
	runsAs := `(has(variables.podSpec.serviceAccountName) && variables.podSpec.serviceAccountName == '` + TenantServiceAccountName + `') || ` +
		`(has(variables.podSpec.serviceAccount) && variables.podSpec.serviceAccount == '` + TenantServiceAccountName + `')`
	return policy(PolicyIdentity, []admissionregistrationv1.NamedRuleWithOperations{
		rule("", "pods", "podtemplates", "replicationcontrollers", "secrets"),
		rule("apps", "deployments", "replicasets", "statefulsets", "daemonsets"),
		rule("batch", "jobs", "cronjobs"),
	}, []admissionregistrationv1.Variable{
		{Name: "podSpec", Expression: `request.kind.kind == 'Pod' ? object.spec : request.kind.kind == 'PodTemplate' ? object.template.spec : ` +
			`request.kind.kind == 'CronJob' ? object.spec.jobTemplate.spec.template.spec : object.spec.template.spec`},
	}, []admissionregistrationv1.Validation{
		when(pod, "!("+runsAs+")",
			`'ServiceAccount `+TenantServiceAccountName+` is the identity the operator deploys as: a pod running as it would hold the operator\'s rights in the namespace; run it as a ServiceAccount of its own'`),
		when(secret, `!(has(object.type) && object.type == 'kubernetes.io/service-account-token' && has(object.metadata.annotations) && `+
			`'kubernetes.io/service-account.name' in object.metadata.annotations && object.metadata.annotations['kubernetes.io/service-account.name'] == '`+TenantServiceAccountName+`')`,
			`'a kubernetes.io/service-account-token Secret for `+TenantServiceAccountName+` would hand out the token of the identity the operator deploys as'`),
	})
}

// rule matches creates and updates of resources (not their subresources) of group, any version.
func rule(group string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources,
			Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}}
}

// tenantNamespaces selects the environment namespaces.
func tenantNamespaces() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{TenantNamespaceLabel: "true"}}
}

func policy(name string, rules []admissionregistrationv1.NamedRuleWithOperations, vars []admissionregistrationv1.Variable,
	validations []admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: oplabels.Labels(AppName, name)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: tenantNamespaces(),
				ResourceRules:     rules,
			},
			Variables:   vars,
			Validations: validations,
		},
	}
}

func binding(name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: oplabels.Labels(AppName, name)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: tenantNamespaces()},
		},
	}
}
