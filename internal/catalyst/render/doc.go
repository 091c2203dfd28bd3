// Package render turns one commit's checkout into the objects of an environment's deploy: a Helm chart
// with the operator's values merged over the Project's, or a manifest directory or kustomization built by
// kustomize with the image and env vars injected; and it refuses what would leave the environment's
// namespace. It talks to no cluster.
package render
