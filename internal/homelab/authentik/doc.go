// Package authentik builds the children of a homelab AuthentikServer: the generated Secret (secret key,
// bootstrap password and token), the server and worker Deployments, the Service and the Istio
// VirtualService that serves authentik.<domain hostname> through the Domain's Gateway.
package authentik
