package catalyst

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/source"
)

// Flags are the catalyst group's command-line flags (docs/catalyst.md); BindFlags binds them and Options
// reads them once the command line is parsed.
type Flags struct {
	domain, issuer, ingressClass, ingressNamespace *string
	builderImage, insecureRegistries, registries   *string
	defaultRegistry, defaultRegistrySecret         *string
	registryTimeout                                *time.Duration
	gitHosts, gitCAFile, tenantRole, cacheDir      *string
	remoteBases                                    *bool
	podSecurity, maxCPU, maxMemory, quotaStorage   *string
	allowedDomains, allowedIssuers                 *string
	gitCacheBytes, renderMaxBytes, renderMemory    *string
	renderTimeout                                  *time.Duration
	concurrentRenders                              *int
}

// BindFlags defines the catalyst flags on fs. The builder image defaults to RELATED_IMAGE_KANIKO, which
// OLM sets.
func BindFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		domain:                fs.String("catalyst-preview-domain", catalyst.DefaultDomain, "DNS domain of catalyst Environment hosts (<namespace>.<domain>) when the Project names none (docs/catalyst.md)."),
		issuer:                fs.String("catalyst-cluster-issuer", catalyst.DefaultIssuerName, "cert-manager ClusterIssuer of catalyst Environment certificates when the Project names none; empty serves plain http."),
		ingressClass:          fs.String("catalyst-ingress-class", "", "IngressClass of catalyst Environment Ingresses when the Project names none; empty uses the cluster's default class."),
		builderImage:          fs.String("catalyst-builder-image", catalyst.BuilderImage(os.Getenv("RELATED_IMAGE_KANIKO")), "Kaniko executor image of catalyst build Jobs (default $RELATED_IMAGE_KANIKO, else "+catalyst.DefaultBuilderImage+"; docs/catalyst.md, Builds)."),
		insecureRegistries:    fs.String("catalyst-insecure-registries", "", "Comma-separated registries (host or host:port) that catalyst image checks and builds reach over plain http; loopback registries always are, every other only over https."),
		registries:            fs.String("catalyst-registries", "", "Comma-separated registries (host for every port, or host:port) catalyst Projects may build to; empty allows any."),
		defaultRegistry:       fs.String("catalyst-default-registry", "", "Registry catalyst Projects without spec.build build to, as <registry>/<namespace>/<name> (such as image-registry.openshift-image-registry.svc:5000); empty leaves them BuildNotConfigured."),
		defaultRegistrySecret: fs.String("catalyst-default-registry-secret", "", "Name of the dockerconfigjson Secret, in each Project's namespace, with the default registry's credentials; empty is anonymous."),
		registryTimeout:       fs.Duration("catalyst-registry-timeout", catalyst.DefaultRegistryTimeout, "Bound of one catalyst image check; a slower registry is RegistryUnreachable."),
		gitHosts:              fs.String("catalyst-git-hosts", "", "Comma-separated hosts catalyst deploys may fetch Git repositories from, whatever their address; empty allows any host with a public address."),
		gitCAFile:             fs.String("catalyst-git-ca-file", "", "PEM file of CAs trusted for catalyst Git https besides the system's."),
		tenantRole:            fs.String("catalyst-tenant-cluster-role", catalyst.DefaultTenantClusterRole, "ClusterRole bound (in each environment namespace only) to the tenant ServiceAccount catalyst-deployer, which the operator impersonates to deploy a repository's objects; the operator needs bind on it (docs/catalyst.md, Tenancy)."),
		remoteBases:           fs.Bool("catalyst-allow-remote-bases", false, "Let catalyst kustomizations name remote bases and resources (URLs), which the operator then fetches itself; refused when false."),
		ingressNamespace:      fs.String("catalyst-ingress-namespace", catalyst.DefaultIngressNamespace, "Namespace of the ingress controller, whose pods the catalyst NetworkPolicy lets reach every Environment's pods."),
		podSecurity:           fs.String(catalyst.FlagPodSecurityLevel, string(catalyst.PodSecurityRestricted), "Pod Security level catalyst environment namespaces enforce: privileged, baseline or restricted (audit and warn stay restricted)."),
		maxCPU:                fs.String(catalyst.FlagMaxQuotaCPU, "", "Most CPU a catalyst Project's resources.defaultQuota may ask for, such as 8; empty sets no ceiling."),
		maxMemory:             fs.String(catalyst.FlagMaxQuotaMemory, "", "Most memory a catalyst Project's resources.defaultQuota may ask for, such as 16Gi; empty sets no ceiling."),
		quotaStorage:          fs.String(catalyst.FlagQuotaStorage, catalyst.DefaultQuotaStorage.String(), "Storage the PersistentVolumeClaims of each catalyst environment namespace may request together (requests.storage); 0 allows none."),
		allowedDomains:        fs.String(catalyst.FlagAllowedDomains, "", "Comma-separated ingress domains catalyst Projects may name besides --catalyst-preview-domain: a name exactly, *.name any domain one label below name."),
		allowedIssuers:        fs.String(catalyst.FlagAllowedClusterIssuers, "", "Comma-separated cert-manager ClusterIssuers catalyst Projects may name besides --catalyst-cluster-issuer; an Issuer in the environment's namespace is always allowed."),
		cacheDir:              fs.String("catalyst-cache-dir", catalyst.DefaultCacheDir(), "Directory of the catalyst Git cache (fetched commits), on a writable volume; the default follows $TMPDIR."),
		gitCacheBytes:         fs.String("catalyst-git-cache-bytes", "1536Mi", "Byte budget of the catalyst Git cache, below its volume's size (the manifest's 2Gi emptyDir): least recently used checkouts are evicted, and a checkout larger than the budget fails FetchFailed (docs/catalyst.md, Budgets)."),
		renderMaxBytes:        fs.String("catalyst-render-max-bytes", "8Mi", "Most bytes a catalyst render (Helm chart, kustomization, manifests) may output, as JSON; more fails RenderFailed."),
		renderMemory:          fs.String("catalyst-render-memory", "320Mi", "Memory (RLIMIT_DATA) of each catalyst render's child process; a render needing more fails RenderFailed."),
		renderTimeout:         fs.Duration("catalyst-render-timeout", render.DefaultTimeout, "Bound of one catalyst render; its child process is killed after it."),
		concurrentRenders:     fs.Int("catalyst-max-concurrent-renders", DefaultConcurrentRenders, "Catalyst renders run at once (each a child process of up to --catalyst-render-memory)."),
	}
}

// quantityBytes reads a byte count flag (a Kubernetes quantity such as 1536Mi).
func quantityBytes(name, v string) (int64, error) {
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("--%s=%q: a positive quantity such as 16Mi", name, v)
	}
	return q.Value(), nil
}

// Options are the group's options from the parsed flags, with workers objects of each kind reconciled
// at once, for an operator limited to the watched namespaces (empty: the whole cluster).
func (f *Flags) Options(workers int, watched []string) (Options, error) {
	deploy, err := DeployConfigFromFlags(*f.gitHosts, *f.gitCAFile)
	if err != nil {
		return Options{}, err
	}
	deploy.CacheDir = *f.cacheDir
	if deploy.CacheBytes, err = quantityBytes("catalyst-git-cache-bytes", *f.gitCacheBytes); err != nil {
		return Options{}, err
	}
	if deploy.Render.MaxBytes, err = quantityBytes("catalyst-render-max-bytes", *f.renderMaxBytes); err != nil {
		return Options{}, err
	}
	if deploy.Render.MemoryBytes, err = quantityBytes("catalyst-render-memory", *f.renderMemory); err != nil {
		return Options{}, err
	}
	deploy.Render.Timeout, deploy.MaxConcurrentRenders = *f.renderTimeout, *f.concurrentRenders
	deploy.TenantClusterRole, deploy.AllowRemoteBases = *f.tenantRole, *f.remoteBases
	defaults, err := catalyst.Defaults{Domain: *f.domain, IngressClass: *f.ingressClass, IngressNamespace: *f.ingressNamespace,
		Issuer: catalystv1.IssuerRef{Name: *f.issuer, Kind: "ClusterIssuer"}}.WithLimits(catalyst.LimitFlags{
		PodSecurityLevel: *f.podSecurity, MaxQuotaCPU: *f.maxCPU, MaxQuotaMemory: *f.maxMemory,
		QuotaStorage: *f.quotaStorage, AllowedDomains: *f.allowedDomains, AllowedClusterIssuers: *f.allowedIssuers})
	if err != nil {
		return Options{}, err
	}
	return Options{
		Defaults:                defaults,
		MaxConcurrentReconciles: workers,
		WatchNamespaces:         watched,
		Build: catalyst.BuildConfig{BuilderImage: *f.builderImage,
			InsecureRegistries: catalyst.SplitRegistries(*f.insecureRegistries),
			Registries:         catalyst.SplitRegistries(*f.registries),
			DefaultRegistry:    *f.defaultRegistry, DefaultRegistrySecret: *f.defaultRegistrySecret,
			GitCABundle: deploy.GitCABundle, GitAllowed: (&source.Fetcher{Hosts: deploy.GitHosts}).Allowed, GitHosts: deploy.GitHosts, RegistryTimeout: *f.registryTimeout},
		Deploy: deploy,
	}, nil
}
