// Package render turns one commit's checkout into the objects of an environment's deploy: a Helm chart
// with the operator's values merged over the Project's, or a manifest directory or kustomization built by
// kustomize with the image and env vars injected; and it refuses what would leave the environment's
// namespace. Renders talk to no cluster; the Helm action (HelmAction: a Helm install or upgrade, with the
// guard and bounded release records) talks to the API server as the tenant, in a child process, as the
// renders run.
package render
