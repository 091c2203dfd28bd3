package render_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/platform-operator/platform-operator/internal/catalyst/render"
)

// clusterScoped are the cluster-scoped kinds policyScope knows; every other kind it serves is namespaced.
var clusterScoped = []string{"ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition", "ClusterIssuer"}

// policyScope serves every kind but Widget, as a RESTMapper of a cluster with the CRDs would.
func policyScope(gvk schema.GroupVersionKind) (bool, error) {
	if gvk.Kind == "Widget" {
		return false, errors.New("no matches for kind Widget")
	}
	return !slices.Contains(clusterScoped, gvk.Kind), nil
}

var policy = render.Policy{Namespace: "env-ns", Host: "env-ns.preview.test", Scope: policyScope, ClusterIssuers: []string{"letsencrypt"}}

// doc parses one YAML object.
func doc(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	objs, err := render.Parse([]byte(y))
	if err != nil || len(objs) != 1 {
		t.Fatalf("parse %q: %v (%d objects)", y, err, len(objs))
	}
	return objs[0]
}

func TestPolicyCheck(t *testing.T) {
	ingress := func(spec string) string {
		return "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\nspec: " + spec
	}
	ingressAnnotated := func(annotations string) string {
		return "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, annotations: " + annotations +
			"}\nspec: {rules: [{host: env-ns.preview.test}]}"
	}
	gw := func(kind, spec string) string {
		return "apiVersion: gateway.networking.k8s.io/v1\nkind: " + kind + "\nmetadata: {name: gw}\nspec: " + spec
	}
	istio := func(group, kind, spec string) string {
		return "apiVersion: " + group + "/v1\nkind: " + kind + "\nmetadata: {name: m}\nspec: " + spec
	}
	cert := func(spec string) string {
		return "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: web}\nspec: " + spec
	}
	svc := func(spec string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: app}\nspec: " + spec
	}
	binding := func(roleRef, subjects string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b}\nroleRef: " + roleRef + "\nsubjects: " + subjects
	}
	deployment := func(podSpec string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: " + podSpec + "}}"
	}
	const role = "{apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}"
	tests := []struct {
		name    string
		doc     string
		refused []string
	}{
		// The operator's own objects, and the same kinds under other names as controls.
		{name: "NetworkPolicy", doc: "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: open}",
			refused: []string{"NetworkPolicy env-ns/open (the operator's NetworkPolicy catalyst locks the namespace down)"}},
		{name: "ResourceQuota", doc: "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: more}",
			refused: []string{"ResourceQuota env-ns/more (the operator's ResourceQuota catalyst locks the namespace down)"}},
		{name: "LimitRange", doc: "apiVersion: v1\nkind: LimitRange\nmetadata: {name: l}",
			refused: []string{"LimitRange env-ns/l (the operator's LimitRange catalyst locks the namespace down)"}},
		{name: "the operator's Ingress", doc: "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: catalyst}\nspec: {rules: [{host: env-ns.preview.test}]}",
			refused: []string{"Ingress env-ns/catalyst (the operator's own)"}},
		{name: "the operator's Certificate", doc: "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: catalyst-tls}\nspec: {dnsNames: [env-ns.preview.test], issuerRef: {name: own}}",
			refused: []string{"Certificate env-ns/catalyst-tls (the operator's own)"}},
		{name: "the operator's ServiceAccount", doc: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: catalyst-deployer}",
			refused: []string{"ServiceAccount env-ns/catalyst-deployer (the operator's own)"}},
		{name: "a ServiceAccount of the chart's", doc: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: app}"},

		// Ingress hosts.
		{name: "Ingress of the host", doc: ingress("{rules: [{host: env-ns.preview.test}], tls: [{hosts: [env-ns.preview.test], secretName: t}]}")},
		{name: "Ingress of names under the host", doc: ingress("{rules: [{host: api.env-ns.preview.test}, {host: '*.env-ns.preview.test'}, {host: ENV-NS.Preview.Test.}]}")},
		{name: "Ingress of another host", doc: ingress("{rules: [{host: evil.example.com}]}"),
			refused: []string{"Ingress env-ns/web (host evil.example.com is not under env-ns.preview.test)"}},
		{name: "Ingress of a sibling environment's host", doc: ingress("{rules: [{host: other.preview.test}, {host: xenv-ns.preview.test}]}"),
			refused: []string{"Ingress env-ns/web (host other.preview.test is not under env-ns.preview.test)",
				"Ingress env-ns/web (host xenv-ns.preview.test is not under env-ns.preview.test)"}},
		{name: "Ingress of a host ending in the environment's", doc: ingress("{rules: [{host: env-ns.preview.test.evil.com}]}"),
			refused: []string{"Ingress env-ns/web (host env-ns.preview.test.evil.com is not under env-ns.preview.test)"}},
		{name: "Ingress wildcard above the host", doc: ingress("{rules: [{host: '*.preview.test'}]}"),
			refused: []string{"Ingress env-ns/web (host *.preview.test is not under env-ns.preview.test)"}},
		{name: "Ingress wildcard inside a name", doc: ingress("{rules: [{host: 'a.*.env-ns.preview.test'}]}"),
			refused: []string{"Ingress env-ns/web (host a.*.env-ns.preview.test is not under env-ns.preview.test)"}},
		{name: "Ingress catch-all rule", doc: ingress("{rules: [{http: {paths: []}}]}"),
			refused: []string{"Ingress env-ns/web (a rule without host catches every host; set host to env-ns.preview.test)"}},
		{name: "Ingress default backend", doc: ingress("{defaultBackend: {service: {name: app, port: {number: 80}}}}"),
			refused: []string{"Ingress env-ns/web (spec.defaultBackend catches requests for every host; route from a rule with the environment's host)"}},
		{name: "Ingress TLS for another host", doc: ingress("{rules: [{host: env-ns.preview.test}], tls: [{hosts: [bank.example.com]}]}"),
			refused: []string{"Ingress env-ns/web (host bank.example.com is not under env-ns.preview.test)"}},
		{name: "Ingress of an older group", doc: "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: old}\nspec: {rules: [{host: evil.example.com}]}",
			refused: []string{"Ingress env-ns/old (host evil.example.com is not under env-ns.preview.test)"}},

		// cert-manager's ingress annotations.
		{name: "Ingress with an allowed ClusterIssuer", doc: ingressAnnotated("{cert-manager.io/cluster-issuer: letsencrypt}")},
		{name: "Ingress with a namespaced Issuer", doc: ingressAnnotated("{cert-manager.io/issuer: own}")},
		{name: "Ingress with another ClusterIssuer", doc: ingressAnnotated("{cert-manager.io/cluster-issuer: internal-ca}"),
			refused: []string{"Ingress env-ns/web (annotation cert-manager.io/cluster-issuer: ClusterIssuer internal-ca is not one the environment may use (letsencrypt))"}},
		{name: "Ingress with a ClusterIssuer as issuer-kind", doc: ingressAnnotated("{cert-manager.io/issuer: internal-ca, cert-manager.io/issuer-kind: ClusterIssuer}"),
			refused: []string{"Ingress env-ns/web (annotation cert-manager.io/issuer: ClusterIssuer internal-ca is not one the environment may use (letsencrypt))"}},
		{name: "Ingress with an nginx snippet", doc: ingressAnnotated("{nginx.ingress.kubernetes.io/server-snippet: 'location /x {}'}"),
			refused: []string{"Ingress env-ns/web (annotation nginx.ingress.kubernetes.io/server-snippet writes the shared ingress controller's configuration)"}},

		// Gateway API.
		{name: "Gateway of the host", doc: gw("Gateway", "{listeners: [{name: http, hostname: '*.env-ns.preview.test'}]}")},
		{name: "Gateway of another host", doc: gw("Gateway", "{listeners: [{name: http, hostname: evil.example.com}]}"),
			refused: []string{"Gateway env-ns/gw (host evil.example.com is not under env-ns.preview.test)"}},
		{name: "Gateway listener without hostname", doc: gw("Gateway", "{listeners: [{name: http}]}"),
			refused: []string{"Gateway env-ns/gw (listener http has no hostname and would take every host; set hostname to env-ns.preview.test)"}},
		{name: "HTTPRoute of the host", doc: gw("HTTPRoute", "{hostnames: [env-ns.preview.test, a.env-ns.preview.test]}")},
		{name: "HTTPRoute of another host", doc: gw("HTTPRoute", "{hostnames: [evil.example.com]}"),
			refused: []string{"HTTPRoute env-ns/gw (host evil.example.com is not under env-ns.preview.test)"}},
		{name: "HTTPRoute without hostnames", doc: gw("HTTPRoute", "{parentRefs: [{name: shared, namespace: gateways}]}"),
			refused: []string{"HTTPRoute env-ns/gw (spec.hostnames is empty, so the route would take every host of its Gateway; list env-ns.preview.test)"}},
		{name: "GRPCRoute of another host", doc: gw("GRPCRoute", "{hostnames: [evil.example.com]}"),
			refused: []string{"GRPCRoute env-ns/gw (host evil.example.com is not under env-ns.preview.test)"}},
		{name: "TLSRoute of another host", doc: "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {name: t}\nspec: {hostnames: ['*']}",
			refused: []string{"TLSRoute env-ns/t (host * is not under env-ns.preview.test)"}},

		// Istio.
		{name: "Istio Gateway of the host", doc: istio("networking.istio.io", "Gateway", "{servers: [{hosts: [env-ns/env-ns.preview.test, ./a.env-ns.preview.test, b.env-ns.preview.test]}]}")},
		{name: "Istio Gateway for another namespace", doc: istio("networking.istio.io", "Gateway", "{servers: [{hosts: [other/env-ns.preview.test, '*/env-ns.preview.test']}]}"),
			refused: []string{"Gateway env-ns/m (host other/env-ns.preview.test lets namespace other bind to the Gateway; use env-ns/ or ./)",
				"Gateway env-ns/m (host */env-ns.preview.test lets namespace * bind to the Gateway; use env-ns/ or ./)"}},
		{name: "Istio Gateway of every host", doc: istio("networking.istio.io", "Gateway", "{servers: [{hosts: ['*']}]}"),
			refused: []string{"Gateway env-ns/m (host * is not under env-ns.preview.test)"}},
		{name: "VirtualService of the host and the namespace's Services", doc: istio("networking.istio.io", "VirtualService", "{hosts: [env-ns.preview.test, web, web.env-ns.svc.cluster.local, web.env-ns.svc]}")},
		{name: "VirtualService of another namespace's Service", doc: istio("networking.istio.io", "VirtualService", "{hosts: [db.other.svc.cluster.local]}"),
			refused: []string{"VirtualService env-ns/m (host db.other.svc.cluster.local is not under env-ns.preview.test)"}},
		{name: "VirtualService of an outside host", doc: istio("networking.istio.io", "VirtualService", "{hosts: [api.example.com]}"),
			refused: []string{"VirtualService env-ns/m (host api.example.com is not under env-ns.preview.test)"}},
		{name: "DestinationRule", doc: istio("networking.istio.io", "DestinationRule", "{host: web}")},
		{name: "ServiceEntry", doc: istio("networking.istio.io", "ServiceEntry", "{hosts: [api.example.com]}"),
			refused: []string{"ServiceEntry env-ns/m (Istio ServiceEntry changes the mesh's routing or policy beyond the namespace)"}},
		{name: "EnvoyFilter", doc: istio("networking.istio.io", "EnvoyFilter", "{}"),
			refused: []string{"EnvoyFilter env-ns/m (Istio EnvoyFilter changes the mesh's routing or policy beyond the namespace)"}},
		{name: "AuthorizationPolicy", doc: istio("security.istio.io", "AuthorizationPolicy", "{}"),
			refused: []string{"AuthorizationPolicy env-ns/m (Istio AuthorizationPolicy changes the mesh's routing or policy beyond the namespace)"}},

		// cert-manager.
		{name: "Certificate of the host from an allowed ClusterIssuer", doc: cert("{dnsNames: [env-ns.preview.test, '*.env-ns.preview.test'], commonName: env-ns.preview.test, issuerRef: {kind: ClusterIssuer, name: letsencrypt}}")},
		{name: "Certificate from a namespaced Issuer", doc: cert("{dnsNames: [env-ns.preview.test], uris: ['spiffe://x'], issuerRef: {name: own}}")},
		{name: "Certificate of another host", doc: cert("{dnsNames: [bank.example.com], commonName: bank.example.com, issuerRef: {name: own}}"),
			refused: []string{"Certificate env-ns/web (host bank.example.com is not under env-ns.preview.test)",
				"Certificate env-ns/web (host bank.example.com is not under env-ns.preview.test)"}},
		{name: "Certificate from another ClusterIssuer", doc: cert("{dnsNames: [env-ns.preview.test], issuerRef: {group: cert-manager.io, kind: ClusterIssuer, name: internal-ca}}"),
			refused: []string{"Certificate env-ns/web (ClusterIssuer internal-ca is not one the environment may use (letsencrypt))"}},
		{name: "Certificate from an external cluster issuer", doc: cert("{dnsNames: [env-ns.preview.test], issuerRef: {group: awspca.cert-manager.io, kind: AWSPCAClusterIssuer, name: pca}}"),
			refused: []string{"Certificate env-ns/web (issuer AWSPCAClusterIssuer.awspca.cert-manager.io pca is cluster-wide)"}},
		{name: "Certificate of a mesh identity from a ClusterIssuer", doc: cert("{dnsNames: [env-ns.preview.test], uris: ['spiffe://cluster.local/ns/kube-system/sa/admin'], issuerRef: {kind: ClusterIssuer, name: letsencrypt}}"),
			refused: []string{"Certificate env-ns/web (spec.uris would be signed by ClusterIssuer letsencrypt; only dnsNames under env-ns.preview.test)"}},
		{name: "Issuer", doc: "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: own}\nspec: {selfSigned: {}}"},
		{name: "ClusterIssuer", doc: "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: mine}\nspec: {selfSigned: {}}",
			refused: []string{"ClusterIssuer mine (cluster-scoped)"}},
		{name: "CertificateRequest to a ClusterIssuer", doc: "apiVersion: cert-manager.io/v1\nkind: CertificateRequest\nmetadata: {name: r}\nspec: {issuerRef: {kind: ClusterIssuer, name: letsencrypt}}",
			refused: []string{"CertificateRequest env-ns/r (a CertificateRequest signed by ClusterIssuer letsencrypt could hold any name; use a Certificate)"}},
		{name: "CertificateRequest to an Issuer", doc: "apiVersion: cert-manager.io/v1\nkind: CertificateRequest\nmetadata: {name: r}\nspec: {issuerRef: {name: own}}"},

		// Services.
		{name: "ClusterIP Service", doc: svc("{type: ClusterIP, ports: [{port: 80}]}")},
		{name: "LoadBalancer Service", doc: svc("{type: LoadBalancer, ports: [{port: 80}]}"),
			refused: []string{"Service env-ns/app (type LoadBalancer opens a port outside the environment's ingress; use ClusterIP)"}},
		{name: "NodePort Service", doc: svc("{type: NodePort, ports: [{port: 80, nodePort: 30080}]}"),
			refused: []string{"Service env-ns/app (type NodePort opens a port outside the environment's ingress; use ClusterIP)",
				"Service env-ns/app (nodePort 30080 opens a port on every node)"}},
		{name: "ExternalName Service", doc: svc("{type: ExternalName, externalName: metadata.internal}"),
			refused: []string{"Service env-ns/app (type ExternalName lets an Ingress reach any host)"}},
		{name: "externalIPs", doc: svc("{ports: [{port: 80}], externalIPs: [203.0.113.1]}"),
			refused: []string{"Service env-ns/app (externalIPs take traffic for addresses outside the cluster)"}},
		{name: "Endpoints", doc: "apiVersion: v1\nkind: Endpoints\nmetadata: {name: app}",
			refused: []string{"Endpoints env-ns/app (Endpoints point a Service at any address; let the Service's selector pick the pods)"}},
		{name: "EndpointSlice", doc: "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: app-1}\naddressType: IPv4",
			refused: []string{"EndpointSlice env-ns/app-1 (Endpoints point a Service at any address; let the Service's selector pick the pods)"}},

		// RBAC.
		{name: "Role and RoleBinding of the namespace", doc: binding(role, "[{kind: ServiceAccount, name: app, namespace: env-ns}, {kind: ServiceAccount, name: app2}, {kind: User, name: alice}]")},
		{name: "RoleBinding of a ClusterRole", doc: binding("{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}", "[{kind: ServiceAccount, name: app}]"),
			refused: []string{"RoleBinding env-ns/b (roleRef names ClusterRole admin; bind a Role of the namespace)"}},
		{name: "RoleBinding of another namespace's accounts", doc: binding(role, "[{kind: ServiceAccount, name: x, namespace: other}, {kind: User, name: 'system:serviceaccount:other:x'}, {kind: Group, name: 'system:serviceaccounts:other'}, {kind: Group, name: 'system:authenticated'}]"),
			refused: []string{"RoleBinding env-ns/b (subject ServiceAccount other/x is of another namespace)",
				"RoleBinding env-ns/b (subject User system:serviceaccount:other:x is of another namespace)",
				"RoleBinding env-ns/b (subject Group system:serviceaccounts:other is of another namespace)",
				"RoleBinding env-ns/b (subject Group system:authenticated holds every namespace's accounts)"}},
		{name: "Role", doc: "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: reader}\nrules: [{apiGroups: [''], resources: [configmaps], verbs: [get]}]"},

		// Pods.
		{name: "Deployment with a ServiceAccount and an emptyDir", doc: deployment("{serviceAccountName: app, volumes: [{name: tmp, emptyDir: {}}], containers: [{name: c, image: i}]}")},
		{name: "Deployment with a hostPath", doc: deployment("{volumes: [{name: root, hostPath: {path: /}}], containers: [{name: c, image: i}]}"),
			refused: []string{"Deployment env-ns/web (volume root is a hostPath: it reads the node's files)"}},
		{name: "CronJob with a hostPath", doc: "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {jobTemplate: {spec: {template: {spec: {volumes: [{name: docker, hostPath: {path: /var/run/docker.sock}}]}}}}}",
			refused: []string{"CronJob env-ns/c (volume docker is a hostPath: it reads the node's files)"}},
		{name: "Pod with a hostPath", doc: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {volumes: [{name: etc, hostPath: {path: /etc}}]}",
			refused: []string{"Pod env-ns/p (volume etc is a hostPath: it reads the node's files)"}},

		// The operator's tenant identity: no pod may run as it, no Secret may mint its token (nor any other
		// long-lived token). Each refused case has its control beside it: another ServiceAccount, or an
		// ordinary Secret.
		{name: "Deployment running as the deployer with automount", doc: deployment("{serviceAccountName: catalyst-deployer, automountServiceAccountToken: true, containers: [{name: c, image: i}]}"),
			refused: []string{"Deployment env-ns/web (serviceAccountName catalyst-deployer is the identity the operator deploys as: a pod running as it would hold the operator's rights in the namespace; run it as a ServiceAccount of its own)"}},
		{name: "Pod running as the deployer through the deprecated serviceAccount", doc: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {serviceAccount: catalyst-deployer, containers: [{name: c, image: i}]}",
			refused: []string{"Pod env-ns/p (serviceAccount catalyst-deployer is the identity the operator deploys as: a pod running as it would hold the operator's rights in the namespace; run it as a ServiceAccount of its own)"}},
		{name: "CronJob running as the deployer", doc: "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {jobTemplate: {spec: {template: {spec: {serviceAccountName: catalyst-deployer}}}}}",
			refused: []string{"CronJob env-ns/c (serviceAccountName catalyst-deployer is the identity the operator deploys as: a pod running as it would hold the operator's rights in the namespace; run it as a ServiceAccount of its own)"}},
		{name: "PodTemplate running as the deployer", doc: "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t}\ntemplate: {spec: {serviceAccountName: catalyst-deployer}}",
			refused: []string{"PodTemplate env-ns/t (serviceAccountName catalyst-deployer is the identity the operator deploys as: a pod running as it would hold the operator's rights in the namespace; run it as a ServiceAccount of its own)"}},
		{name: "StatefulSet, DaemonSet, ReplicaSet, Job, ReplicationController running as the deployer", doc: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {template: {spec: {serviceAccountName: catalyst-deployer}}}",
			refused: []string{"StatefulSet env-ns/s (serviceAccountName catalyst-deployer is the identity the operator deploys as: a pod running as it would hold the operator's rights in the namespace; run it as a ServiceAccount of its own)"}},
		{name: "Deployment running as its own ServiceAccount with automount", doc: deployment("{serviceAccountName: app, automountServiceAccountToken: true, containers: [{name: c, image: i}]}")},
		{name: "token Secret for the deployer", doc: "apiVersion: v1\nkind: Secret\nmetadata: {name: t, annotations: {kubernetes.io/service-account.name: catalyst-deployer}}\ntype: kubernetes.io/service-account-token",
			refused: []string{"Secret env-ns/t (type kubernetes.io/service-account-token for ServiceAccount catalyst-deployer would hand out the token of the identity the operator deploys as)"}},
		{name: "token Secret for another ServiceAccount", doc: "apiVersion: v1\nkind: Secret\nmetadata: {name: t, annotations: {kubernetes.io/service-account.name: app}}\ntype: kubernetes.io/service-account-token",
			refused: []string{`Secret env-ns/t (type kubernetes.io/service-account-token mints a long-lived token for ServiceAccount "app"; pods get short-lived tokens of their own ServiceAccount)`}},
		{name: "an Opaque Secret naming the deployer", doc: "apiVersion: v1\nkind: Secret\nmetadata: {name: t, annotations: {kubernetes.io/service-account.name: catalyst-deployer}}\ntype: Opaque"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := doc(t, tt.doc)
			got := policy.Check([]*unstructured.Unstructured{o})
			if !slices.Equal(got, tt.refused) {
				t.Errorf("refused =\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.refused, "\n  "))
			}
		})
	}
}

func TestPolicyWithoutHostOrIssuers(t *testing.T) {
	p := render.Policy{Namespace: "env-ns", Scope: policyScope}
	objs := []*unstructured.Unstructured{
		doc(t, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, annotations: {cert-manager.io/cluster-issuer: letsencrypt}}\nspec: {rules: [{host: env-ns.preview.test}]}"),
	}
	want := []string{
		"Ingress env-ns/web (host env-ns.preview.test: the environment has no host)",
		"Ingress env-ns/web (annotation cert-manager.io/cluster-issuer: ClusterIssuer letsencrypt is not one the environment may use (none is))",
	}
	if got := p.Check(objs); !slices.Equal(got, want) {
		t.Errorf("refused = %q, want %q", got, want)
	}
	if got := (render.Policy{Namespace: "env-ns"}).Check([]*unstructured.Unstructured{doc(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}")}); len(got) != 1 {
		t.Errorf("a Policy without Scope refused %q, want the ConfigMap", got)
	}
}
