package catalysttest

// AppImagePlaceholder is the image AppFiles' Deployment names: render.ImagePlaceholder, which the
// operator replaces with the environment's image (spelled out here: this package imports no other
// package of the module but the API types).
const AppImagePlaceholder = "catalyst-image"

// AppDeployment and AppPath are the Deployment AppFiles holds and the directory it is in, the
// spec.deployment.path of a manifest Project deploying it.
const (
	AppDeployment = "web"
	AppPath       = "deploy"
)

// AppFiles is a small application repository (path to content) for a manifest Project, made to run in
// an environment's namespace on a cluster whose pods do start (kwok, say): deploy/app.yaml holds a
// Deployment "web" of one replica of AppImagePlaceholder, fit for the restricted Pod Security profile
// the namespace enforces and with requests and limits within the fixtures' quota, and Service "app" port
// "http", which the environment's Ingress sends traffic to.
func AppFiles() map[string]string {
	return map[string]string{
		"README.md": "# web\n\n`deploy/` is what the operator applies, with the environment's image.\n",
		AppPath + "/app.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + AppDeployment + `
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      securityContext:
        runAsNonRoot: true
        runAsUser: 10001
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: web
        image: ` + AppImagePlaceholder + `
        ports:
        - {name: http, containerPort: 8080}
        resources:
          requests: {cpu: 50m, memory: 64Mi}
          limits: {cpu: 200m, memory: 128Mi}
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
---
apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
`,
	}
}
