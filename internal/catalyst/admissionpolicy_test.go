package catalyst_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
)

// The policies' CEL, compiled with the API server's own environment for new expressions (the libraries
// and cost rules kube-apiserver 1.34 admits a policy with) and evaluated in process the way the
// API server evaluates a policy: variables in order, then each validation, the message of the first that
// fails. The envtest specs (controllers/catalyst/environment_admission_test.go) prove the API server
// enforces them; these tables cover the corners cheaply.

// evaluator holds the compiled policies.
type evaluator struct {
	policies map[string]*admissionregistrationv1.ValidatingAdmissionPolicy
	env      *cel.Env
}

func newEvaluator(t *testing.T) *evaluator {
	t.Helper()
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), true).NewExpressionsEnv()
	env, err := base.Extend(cel.Variable("object", cel.DynType), cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		t.Fatal(err)
	}
	e := &evaluator{policies: map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}, env: env}
	for _, obj := range catalyst.AdmissionPolicies() {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			e.policies[p.Name] = p
		}
	}
	return e
}

// eval runs expression src and returns its value.
func (e *evaluator) eval(t *testing.T, src string, act map[string]any) (any, error) {
	t.Helper()
	ast, iss := e.env.Compile(src)
	if iss.Err() != nil {
		t.Fatalf("compile %s: %v", src, iss.Err())
	}
	prg, err := e.env.Program(ast)
	if err != nil {
		t.Fatalf("program %s: %v", src, err)
	}
	out, _, err := prg.Eval(act)
	if err != nil {
		return nil, err
	}
	return out.Value(), nil
}

// admit evaluates policy for an object of group/kind in a namespace with annotations: "" when admitted,
// otherwise the refusal's message (or the evaluation error, which failurePolicy Fail turns into a refusal).
func (e *evaluator) admit(t *testing.T, policy, group, kind string, object map[string]any, annotations map[string]any) string {
	t.Helper()
	vars := map[string]any{}
	act := map[string]any{
		"object":          object,
		"namespaceObject": map[string]any{"metadata": map[string]any{"name": "env", "annotations": annotations}},
		"request":         map[string]any{"kind": map[string]any{"group": group, "version": "v1", "kind": kind}},
		"variables":       vars,
	}
	p := e.policies[policy]
	for _, v := range p.Spec.Variables {
		// The API server evaluates variables lazily; one that does not apply to this kind (podSpec of a
		// Secret) errors only if a validation reads it.
		if val, err := e.eval(t, v.Expression, act); err == nil {
			vars[v.Name] = val
		}
	}
	for _, v := range p.Spec.Validations {
		ok, err := e.eval(t, v.Expression, act)
		if err != nil {
			return "error: " + err.Error()
		}
		if ok == true {
			continue
		}
		if v.MessageExpression == "" {
			return v.Message
		}
		msg, err := e.eval(t, v.MessageExpression, act)
		if err != nil {
			t.Fatalf("messageExpression %s: %v", v.MessageExpression, err)
		}
		return fmt.Sprint(msg)
	}
	return ""
}

func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAdmissionPolicies(t *testing.T) {
	e := newEvaluator(t)
	ns := map[string]any{catalyst.HostAnnotation: "env.preview.test", catalyst.ClusterIssuersAnnotation: "letsencrypt,internal"}
	ingress := func(spec string) string { return "metadata: {name: web}\nspec: " + spec }
	cert := func(spec string) string { return "metadata: {name: c}\nspec: " + spec }
	pod := func(spec string) string { return "metadata: {name: p}\nspec: " + spec }
	tests := []struct {
		name, policy, group, kind, object string
		namespace                         map[string]any
		refused                           string // a part of the message; "" admitted
	}{
		// Hosts.
		{name: "Ingress for the host", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{host: env.preview.test}, {host: api.env.preview.test}], tls: [{hosts: ['*.env.preview.test']}]}")},
		{name: "Ingress host in capitals with a trailing dot", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{host: API.env.preview.test.}]}")},
		{name: "Ingress for a foreign host", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object:  ingress("{rules: [{host: env.preview.test}, {host: login.bank.example.com}]}"),
			refused: "Ingress host login.bank.example.com not under the environment's host env.preview.test"},
		{name: "Ingress for a host that only ends like it", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{host: evilenv.preview.test}]}"), refused: "evilenv.preview.test not under"},
		{name: "Ingress for the parent domain", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{host: preview.test}]}"), refused: "preview.test not under"},
		{name: "Ingress wildcard not as the first label", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{host: 'a.*.env.preview.test'}]}"), refused: "not under"},
		{name: "Ingress TLS for a foreign host", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object:  ingress("{rules: [{host: env.preview.test}], tls: [{hosts: [env.preview.test]}, {hosts: [bank.example.com]}]}"),
			refused: "Ingress TLS host bank.example.com not under"},
		{name: "Ingress rule without host", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{http: {paths: []}}]}"), refused: "a rule without host catches every host; set host to env.preview.test"},
		{name: "Ingress defaultBackend", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{defaultBackend: {service: {name: a, port: {number: 80}}}}"), refused: "spec.defaultBackend catches requests for every host"},
		{name: "Ingress without a host annotation on the namespace", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{host: env.preview.test}]}"), namespace: map[string]any{}, refused: "(the namespace has none)"},
		{name: "Ingress under a namespace host that is a top-level domain", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{host: x.evil.com}]}"), namespace: map[string]any{catalyst.HostAnnotation: "com"}, refused: "not under"},
		{name: "Ingress with a trailing dot where the namespace has no host", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: ingress("{rules: [{host: evil.com.}]}"), namespace: map[string]any{}, refused: "(the namespace has none)"},
		{name: "Ingress with a snippet", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object:  "metadata: {name: web, annotations: {nginx.ingress.kubernetes.io/server-snippet: 'x'}}\nspec: {rules: [{host: env.preview.test}]}",
			refused: "annotation nginx.ingress.kubernetes.io/server-snippet writes the shared ingress controller's configuration"},
		{name: "Ingress with another nginx annotation", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: "metadata: {name: web, annotations: {nginx.ingress.kubernetes.io/ssl-redirect: 'true'}}\nspec: {rules: [{host: env.preview.test}]}"},
		{name: "Ingress asking an allowed ClusterIssuer", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: "metadata: {name: web, annotations: {cert-manager.io/cluster-issuer: internal}}\nspec: {rules: [{host: env.preview.test}]}"},
		{name: "Ingress asking another ClusterIssuer", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object:  "metadata: {name: web, annotations: {cert-manager.io/cluster-issuer: corp-ca}}\nspec: {rules: [{host: env.preview.test}]}",
			refused: "ClusterIssuer corp-ca is not one the environment may use (allowed: letsencrypt, internal)"},
		{name: "Ingress asking an external cluster issuer kind", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object:  "metadata: {name: web, annotations: {cert-manager.io/issuer: letsencrypt, cert-manager.io/issuer-kind: AWSPCAClusterIssuer, cert-manager.io/issuer-group: awspca.cert-manager.io}}\nspec: {rules: [{host: env.preview.test}]}",
			refused: "is a cluster-wide issuer"},
		{name: "Ingress asking a namespaced Issuer", policy: catalyst.PolicyHosts, group: "networking.k8s.io", kind: "Ingress",
			object: "metadata: {name: web, annotations: {cert-manager.io/issuer: own}}\nspec: {rules: [{host: env.preview.test}]}"},
		{name: "Gateway listener for the host", policy: catalyst.PolicyHosts, group: "gateway.networking.k8s.io", kind: "Gateway",
			object: "metadata: {name: g}\nspec: {listeners: [{name: a, hostname: '*.env.preview.test'}]}"},
		{name: "Gateway listener without hostname", policy: catalyst.PolicyHosts, group: "gateway.networking.k8s.io", kind: "Gateway",
			object: "metadata: {name: g}\nspec: {listeners: [{name: a}]}", refused: "a listener without hostname takes every host"},
		{name: "Gateway listener for a foreign host", policy: catalyst.PolicyHosts, group: "gateway.networking.k8s.io", kind: "Gateway",
			object: "metadata: {name: g}\nspec: {listeners: [{name: a, hostname: bank.example.com}]}", refused: "Gateway listener hostname bank.example.com not under"},
		{name: "HTTPRoute for the host", policy: catalyst.PolicyHosts, group: "gateway.networking.k8s.io", kind: "HTTPRoute",
			object: "metadata: {name: r}\nspec: {hostnames: [env.preview.test]}"},
		{name: "HTTPRoute without hostnames", policy: catalyst.PolicyHosts, group: "gateway.networking.k8s.io", kind: "HTTPRoute",
			object: "metadata: {name: r}\nspec: {}", refused: "spec.hostnames is empty"},
		{name: "GRPCRoute for a foreign host", policy: catalyst.PolicyHosts, group: "gateway.networking.k8s.io", kind: "GRPCRoute",
			object: "metadata: {name: r}\nspec: {hostnames: [bank.example.com]}", refused: "route hostname bank.example.com not under"},
		{name: "Certificate for the host from an allowed ClusterIssuer", policy: catalyst.PolicyHosts, group: "cert-manager.io", kind: "Certificate",
			object: cert("{dnsNames: [env.preview.test, '*.env.preview.test'], commonName: env.preview.test, issuerRef: {kind: ClusterIssuer, name: letsencrypt}}")},
		{name: "Certificate from the namespace's Issuer", policy: catalyst.PolicyHosts, group: "cert-manager.io", kind: "Certificate",
			object: cert("{dnsNames: [env.preview.test], uris: ['spiffe://x'], issuerRef: {name: own}}")},
		{name: "Certificate from another ClusterIssuer", policy: catalyst.PolicyHosts, group: "cert-manager.io", kind: "Certificate",
			object:  cert("{dnsNames: [env.preview.test], issuerRef: {kind: ClusterIssuer, name: corp-ca}}"),
			refused: "issuerRef ClusterIssuer corp-ca is not an issuer the environment may use (allowed: letsencrypt, internal)"},
		{name: "Certificate from an allowed name of an external cluster kind", policy: catalyst.PolicyHosts, group: "cert-manager.io", kind: "Certificate",
			object:  cert("{dnsNames: [env.preview.test], issuerRef: {kind: ClusterIssuer, group: awspca.cert-manager.io, name: letsencrypt}}"),
			refused: "is not an issuer the environment may use"},
		{name: "Certificate for a foreign name", policy: catalyst.PolicyHosts, group: "cert-manager.io", kind: "Certificate",
			object:  cert("{dnsNames: [env.preview.test, bank.example.com], issuerRef: {kind: ClusterIssuer, name: letsencrypt}}"),
			refused: "Certificate dnsName bank.example.com not under"},
		{name: "Certificate with a foreign commonName", policy: catalyst.PolicyHosts, group: "cert-manager.io", kind: "Certificate",
			object:  cert("{commonName: bank.example.com, issuerRef: {kind: ClusterIssuer, name: letsencrypt}}"),
			refused: "Certificate commonName bank.example.com not under"},
		{name: "Certificate with a URI SAN from a ClusterIssuer", policy: catalyst.PolicyHosts, group: "cert-manager.io", kind: "Certificate",
			object:  cert("{dnsNames: [env.preview.test], uris: ['spiffe://cluster.local/ns/kube-system/sa/admin'], issuerRef: {kind: ClusterIssuer, name: letsencrypt}}"),
			refused: "no uris, ipAddresses, emailAddresses or otherNames"},

		// Services.
		{name: "ClusterIP Service", policy: catalyst.PolicyServices, kind: "Service", object: "metadata: {name: s}\nspec: {type: ClusterIP, ports: [{port: 80}]}"},
		{name: "Service without type", policy: catalyst.PolicyServices, kind: "Service", object: "metadata: {name: s}\nspec: {ports: [{port: 80}]}"},
		{name: "LoadBalancer Service", policy: catalyst.PolicyServices, kind: "Service", object: "metadata: {name: s}\nspec: {type: LoadBalancer}",
			refused: "type LoadBalancer opens a port outside the environment's ingress; use ClusterIP"},
		{name: "NodePort Service", policy: catalyst.PolicyServices, kind: "Service", object: "metadata: {name: s}\nspec: {type: NodePort}", refused: "type NodePort"},
		{name: "ExternalName Service", policy: catalyst.PolicyServices, kind: "Service", object: "metadata: {name: s}\nspec: {type: ExternalName, externalName: x.example.com}",
			refused: "type ExternalName lets an Ingress reach any host"},
		{name: "Service with externalIPs", policy: catalyst.PolicyServices, kind: "Service", object: "metadata: {name: s}\nspec: {externalIPs: [203.0.113.1]}",
			refused: "externalIPs take traffic"},

		// The deployer identity.
		{name: "Pod as its own ServiceAccount", policy: catalyst.PolicyIdentity, kind: "Pod", object: pod("{serviceAccountName: app, automountServiceAccountToken: true}")},
		{name: "Pod as the default ServiceAccount", policy: catalyst.PolicyIdentity, kind: "Pod", object: pod("{containers: []}")},
		{name: "Pod as the deployer", policy: catalyst.PolicyIdentity, kind: "Pod", object: pod("{serviceAccountName: catalyst-deployer}"),
			refused: "ServiceAccount catalyst-deployer is the identity the operator deploys as"},
		{name: "Pod as the deployer through the deprecated field", policy: catalyst.PolicyIdentity, kind: "Pod", object: pod("{serviceAccount: catalyst-deployer}"),
			refused: "catalyst-deployer"},
		{name: "Deployment as the deployer", policy: catalyst.PolicyIdentity, group: "apps", kind: "Deployment",
			object: "metadata: {name: d}\nspec: {template: {spec: {serviceAccountName: catalyst-deployer}}}", refused: "catalyst-deployer"},
		{name: "Deployment as its own", policy: catalyst.PolicyIdentity, group: "apps", kind: "Deployment",
			object: "metadata: {name: d}\nspec: {template: {spec: {serviceAccountName: app}}}"},
		{name: "CronJob as the deployer", policy: catalyst.PolicyIdentity, group: "batch", kind: "CronJob",
			object: "metadata: {name: c}\nspec: {jobTemplate: {spec: {template: {spec: {serviceAccountName: catalyst-deployer}}}}}", refused: "catalyst-deployer"},
		{name: "PodTemplate as the deployer", policy: catalyst.PolicyIdentity, kind: "PodTemplate",
			object: "metadata: {name: t}\ntemplate: {spec: {serviceAccountName: catalyst-deployer}}", refused: "catalyst-deployer"},
		{name: "token Secret for the deployer", policy: catalyst.PolicyIdentity, kind: "Secret",
			object:  "metadata: {name: s, annotations: {kubernetes.io/service-account.name: catalyst-deployer}}\ntype: kubernetes.io/service-account-token",
			refused: "a kubernetes.io/service-account-token Secret for catalyst-deployer"},
		{name: "token Secret for another ServiceAccount", policy: catalyst.PolicyIdentity, kind: "Secret",
			object: "metadata: {name: s, annotations: {kubernetes.io/service-account.name: app}}\ntype: kubernetes.io/service-account-token"},
		{name: "Opaque Secret naming the deployer", policy: catalyst.PolicyIdentity, kind: "Secret",
			object: "metadata: {name: s, annotations: {kubernetes.io/service-account.name: catalyst-deployer}}\ntype: Opaque"},
		{name: "Secret without annotations", policy: catalyst.PolicyIdentity, kind: "Secret", object: "metadata: {name: s}\ndata: {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			annotations := ns
			if tt.namespace != nil {
				annotations = tt.namespace
			}
			got := e.admit(t, tt.policy, tt.group, tt.kind, obj(t, tt.object), annotations)
			switch {
			case tt.refused == "" && got != "":
				t.Errorf("refused: %s", got)
			case tt.refused != "" && !strings.Contains(got, tt.refused):
				t.Errorf("got %q, want a refusal containing %q", got, tt.refused)
			}
		})
	}
}

// TestAdmissionPolicyShape: every policy is bound, by a binding of its name, to the labelled namespaces
// only, denies, fails closed, and matches creates and updates of resources (never subresources).
func TestAdmissionPolicyShape(t *testing.T) {
	objs := catalyst.AdmissionPolicies()
	if len(objs) != 2*len(catalyst.PolicyNames) {
		t.Fatalf("%d objects, want a policy and a binding for each of %v", len(objs), catalyst.PolicyNames)
	}
	for i, name := range catalyst.PolicyNames {
		p, ok1 := objs[2*i].(*admissionregistrationv1.ValidatingAdmissionPolicy)
		b, ok2 := objs[2*i+1].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		if !ok1 || !ok2 || p.Name != name || b.Name != name || b.Spec.PolicyName != name {
			t.Fatalf("objects %d, %d are not policy and binding %s", 2*i, 2*i+1, name)
		}
		if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
			t.Errorf("%s: must fail closed and deny", name)
		}
		for _, sel := range []map[string]string{p.Spec.MatchConstraints.NamespaceSelector.MatchLabels, b.Spec.MatchResources.NamespaceSelector.MatchLabels} {
			if len(sel) != 1 || sel[catalyst.TenantNamespaceLabel] != "true" {
				t.Errorf("%s: namespace selector %v, want %s=true only", name, sel, catalyst.TenantNamespaceLabel)
			}
		}
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			for _, res := range r.Resources {
				if strings.Contains(res, "/") || res == "*" {
					t.Errorf("%s: resource %q", name, res)
				}
			}
		}
	}
}

// TestNamespaceCarriesPolicyInputs: the namespace the operator makes is what the bindings select, with
// the environment's host (lower case) and the ClusterIssuers its objects may name.
func TestNamespaceCarriesPolicyInputs(t *testing.T) {
	env := catalysttest.Environment("team-a", "pr-1", "team-a", "web")
	p := &catalystv1.Project{Spec: catalystv1.ProjectSpec{Ingress: &catalystv1.ProjectIngress{Domain: "Preview.Example.com"}}}
	s := catalyst.SettingsFor(p, catalyst.Defaults{Domain: "preview.test", Issuer: catalystv1.IssuerRef{Name: "letsencrypt"}, AllowedClusterIssuers: []string{"internal"}})
	ns := catalyst.NamespaceFor(env, catalyst.PartsOf(env), "team-a-web-pr-1", s)
	if ns.Labels[catalyst.TenantNamespaceLabel] != "true" {
		t.Errorf("labels %v lack %s=true", ns.Labels, catalyst.TenantNamespaceLabel)
	}
	if got := ns.Annotations[catalyst.HostAnnotation]; got != "team-a-web-pr-1.preview.example.com" {
		t.Errorf("host annotation %q", got)
	}
	if got := ns.Annotations[catalyst.ClusterIssuersAnnotation]; got != "letsencrypt,internal" {
		t.Errorf("cluster issuers annotation %q", got)
	}
}
