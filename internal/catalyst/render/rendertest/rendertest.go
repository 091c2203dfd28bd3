// Package rendertest holds small repositories (as path-to-content maps) of each deployment type, for the
// tests and the demo: a Helm chart, a manifest directory and a kustomization, each running one
// Deployment "web" of the environment's image behind Service "app".
package rendertest

// Deployment is the Deployment every fixture makes.
const Deployment = "web"

// Files is a repository's content, path to file.
type Files map[string]string

// deployment is the manifests' Deployment, with the image placeholder.
const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: catalyst-image
        ports:
        - {name: http, containerPort: 8080}
        env:
        - {name: FROM_REPO, value: "yes"}
`

const service = `apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
`

// Extra is a ConfigMap the first commit of a fixture holds and a later one may remove.
const Extra = "extra"

const extra = `apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
data:
  a: "1"
`

// ClusterRole is a cluster-scoped object, which the operator refuses.
const ClusterRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: escape
rules: []
`

// OtherNamespace is an object for another namespace, which the operator refuses.
const OtherNamespace = `apiVersion: v1
kind: ConfigMap
metadata:
  name: elsewhere
  namespace: kube-system
data: {}
`

// Manifests is a manifest directory under deploy/: the Deployment and Service in one file (two
// documents), the extra ConfigMap in deploy/extra/extra.yaml, and a README the build ignores.
func Manifests() Files {
	return Files{
		"deploy/app.yaml":         deployment + "---\n" + service,
		"deploy/extra/extra.yaml": extra,
		"README.md":               "# app\n",
	}
}

// Kustomization is a base under kustomize/base and an overlay kustomize/overlay that adds the extra
// ConfigMap and a label.
func Kustomization() Files {
	return Files{
		"kustomize/base/deployment.yaml": deployment,
		"kustomize/base/service.yaml":    service,
		"kustomize/base/kustomization.yaml": `resources:
- deployment.yaml
- service.yaml
`,
		"kustomize/overlay/extra.yaml": extra,
		"kustomize/overlay/kustomization.yaml": `resources:
- ../base
- extra.yaml
labels:
- pairs: {tier: preview}
`,
	}
}

// Chart is a Helm chart under chart/: the Deployment from image.repository, image.tag and env; Service
// app; the extra ConfigMap unless values say extra: false; a ClusterRole when values say clusterRole:
// true.
func Chart() Files {
	return Files{
		"chart/Chart.yaml": `apiVersion: v2
name: web
version: 0.1.0
`,
		"chart/values.yaml": `image:
  repository: example.com/placeholder
  tag: latest
  pullPolicy: IfNotPresent
env: []
extra: true
clusterRole: false
replicas: 1
`,
		"chart/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app.kubernetes.io/managed-by: {{ .Release.Service }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        ports:
        - {name: http, containerPort: 8080}
        {{- with .Values.env }}
        env:
{{ toYaml . | indent 8 }}
        {{- end }}
`,
		"chart/templates/service.yaml": service,
		"chart/templates/extra.yaml": `{{- if .Values.extra }}
` + extra + `{{- end }}
`,
		"chart/templates/clusterrole.yaml": `{{- if .Values.clusterRole }}
` + ClusterRole + `{{- end }}
`,
	}
}
