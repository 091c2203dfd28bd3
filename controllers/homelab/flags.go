package homelab

import (
	"flag"
	"os"

	"github.com/platform-operator/platform-operator/internal/homelab/domain"
)

// Flags are the homelab group's command-line flags (docs/homelab-services.md); BindFlags binds them and
// Options reads them once the command line is parsed.
type Flags struct {
	domainPolicy, gatewayNamespace *string
}

// BindFlags defines the homelab flags on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		domainPolicy:     fs.String(FlagDomainPolicy, "", "Which namespaces may claim which homelab Domain hostnames, and with which ClusterIssuers: NAMESPACE=SUFFIX|SUFFIX[:ISSUER|ISSUER];... (NAMESPACE or SUFFIX * for any); empty allows no Domain (docs/homelab-services.md, Hostname ownership and policy)."),
		gatewayNamespace: fs.String("homelab-gateway-namespace", domain.DefaultGatewayNamespace, "Namespace of the Istio ingress gateway that serves homelab Domains: their Certificates and Gateways are made there (docs/homelab-services.md)."),
	}
}

// Options are the group's options from the parsed flags and the image OLM sets
// (RELATED_IMAGE_AUTHENTIK), with workers objects of each kind reconciled at once. The domain policy is
// parsed when the group is set up (the Domain reconciler and webhook rows), as it always was.
func (f *Flags) Options(workers int) Options {
	return Options{MaxConcurrentReconciles: workers, GatewayNamespace: *f.gatewayNamespace,
		AuthentikImage: os.Getenv("RELATED_IMAGE_AUTHENTIK"), DomainPolicy: *f.domainPolicy}
}
