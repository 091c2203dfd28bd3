// Package kustomize checks what the kustomizations under config/ render, with the kustomize the Makefile
// pins: config/default (`make deploy`) serves the admission webhooks with cert-manager's certificate
// mounted where the manager reads it and the CA injected into the webhook configurations, and
// config/manifests (the input of `make bundle`) hands operator-sdk the webhook configurations and their
// Service, from which it writes the CSV's webhookdefinitions, without anything of cert-manager's.
package kustomize
