package tests

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
)

// ergoImageEnv is the operator's environment variable for the ergo image; OLM and mirrors rewrite
// RELATED_IMAGE_* values, and relatedImages lists it.
const ergoImageEnv = "RELATED_IMAGE_ERGO"

func sampleChildrenAdmitted(ctx context.Context, env Env) *result {
	r := newResult(SampleChildrenAdmitted)
	objs, err := samples(env.Bundle)
	if err != nil {
		r.broken("%v", err)
		return r
	}
	if env.Client == nil {
		r.broken("no cluster to create the children in")
		return r
	}
	image := env.ErgoImage
	if image == "" {
		if image = deploymentEnv(env.Bundle.CSV, ergoImageEnv); image == "" {
			r.fail("the ClusterServiceVersion's deployment does not set %s", ergoImageEnv)
		}
	}
	networks := 0
	for i := range objs {
		u := &objs[i]
		if u.GroupVersionKind() != ircv1.GroupVersion.WithKind("ErgoNetwork") {
			continue
		}
		networks++
		id := sampleID(u)
		admitted, err := dryRunCreate(ctx, env.Client, u, env.Namespace)
		if err != nil {
			r.fail("%s is refused by the API server: %v", id, err)
			continue
		}
		n := &ircv1.ErgoNetwork{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(admitted.Object, n); err != nil {
			r.fail("%s: %v", id, err)
			continue
		}
		if n.UID == "" {
			// Children carry an owner reference, which needs a UID; a dry run may not assign one.
			n.UID = types.UID("00000000-0000-0000-0000-000000000000")
		}
		for _, msg := range childrenOf(ctx, r, env.Client, n, image) {
			r.fail("%s: %s", id, msg)
		}
	}
	if networks == 0 {
		r.fail("alm-examples has no ErgoNetwork")
	}
	return r
}

// childrenOf builds what the operator would apply for n, checks the rendered config against the spec and
// the Deployment, and dry-runs every child. It returns what is wrong.
func childrenOf(ctx context.Context, r *result, c client.Client, n *ircv1.ErgoNetwork, image string) []string {
	cfg := ergo.BuildConfig(n, n.Spec.OperCredentials != nil)
	rendered, err := ergo.RenderConfig(cfg)
	if err != nil {
		return []string{fmt.Sprintf("ircd.yaml does not render: %v", err)}
	}
	deploy := ergo.Deployment(n, ergo.Options{Image: image}, ergo.ConfigDigest(rendered, nil, nil))
	problems := CheckErgoConfig(n, rendered, deploy)
	r.logf("%s/%s: ircd.yaml is %d bytes", n.Namespace, n.Name, len(rendered))

	configMap, err := ergo.SourcedConfigMap(n, cfg, rendered)
	if err != nil {
		return []string{fmt.Sprintf("ircd.yaml has no source: %v", err)}
	}
	children := []client.Object{configMap, ergo.PVC(n), deploy, ergo.Service(n)}
	if cert := ergo.Certificate(n); cert != nil {
		children = append(children, cert)
	}
	if route := ergo.Route(n); route != nil {
		children = append(children, route)
	}
	for _, child := range children {
		gvk, err := apiutil.GVKForObject(child, c.Scheme())
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		kind := fmt.Sprintf("%s %s", gvk.Kind, child.GetName())
		if _, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); meta.IsNoMatchError(err) {
			r.suggest("%s not checked: the cluster does not serve %s", kind, gvk.GroupVersion())
			continue
		}
		u := &unstructured.Unstructured{}
		if u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(child); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", kind, err))
			continue
		}
		u.SetGroupVersionKind(gvk)
		if _, err := dryRunCreate(ctx, c, u, n.Namespace); err != nil {
			problems = append(problems, fmt.Sprintf("the API server refuses the %s the operator would apply: %v", kind, err))
			continue
		}
		r.logf("%s/%s: %s admitted", n.Namespace, n.Name, kind)
	}
	return problems
}

// CheckErgoConfig reads the rendered ircd.yaml back and checks it against the network's spec and against
// the Deployment that runs it: the server and network names, the listeners, and that every file ergo is
// told to read or write (its config, the certificate, the datastore, the lock file) is where the
// Deployment's volumes put it. It returns what disagrees.
func CheckErgoConfig(n *ircv1.ErgoNetwork, rendered []byte, deploy *appsv1.Deployment) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	var cfg ergo.Config
	if err := yaml.UnmarshalStrict(rendered, &cfg); err != nil {
		return []string{fmt.Sprintf("ircd.yaml does not read back: %v", err)}
	}
	if cfg.Server.Name != n.Spec.Hostname {
		bad("ircd.yaml server.name is %q, the spec's hostname %q", cfg.Server.Name, n.Spec.Hostname)
	}
	if want := n.Spec.EffectiveNetworkName(); cfg.Network.Name != want {
		bad("ircd.yaml network.name is %q, want %q", cfg.Network.Name, want)
	}

	if len(deploy.Spec.Template.Spec.Containers) != 1 {
		bad("the Deployment has %d containers, want 1", len(deploy.Spec.Template.Spec.Containers))
		return problems
	}
	pod := deploy.Spec.Template.Spec
	ctr := pod.Containers[0]
	want := map[string]bool{}
	for _, l := range n.Spec.Listeners {
		want[l.Address] = l.TLS
	}
	for _, addr := range sortedKeys(cfg.Server.Listeners) {
		lc := cfg.Server.Listeners[addr]
		isTLS, ok := want[addr]
		switch {
		case !ok:
			bad("ircd.yaml listens on %q, which the spec does not ask for", addr)
			continue
		case isTLS != (lc.TLS != nil):
			bad("ircd.yaml listener %q: tls is %t, the spec says %t", addr, lc.TLS != nil, isTLS)
			continue
		case lc.TLS == nil:
			continue
		}
		for file, key := range map[string]string{lc.TLS.Cert: corev1.TLSCertKey, lc.TLS.Key: corev1.TLSPrivateKeyKey} {
			if src := fileSource(pod, ctr, file); src != (source{"Secret", ergo.TLSSecretName(n), key}) {
				bad("listener %q reads %s, which the Deployment fills from %s, want key %s of Secret %s", addr, file, src,
					key, ergo.TLSSecretName(n))
			}
		}
	}
	for addr := range want {
		if _, ok := cfg.Server.Listeners[addr]; !ok {
			bad("ircd.yaml has no listener for the spec's %q", addr)
		}
	}
	ports := map[int32]bool{}
	for _, p := range ctr.Ports {
		ports[p.ContainerPort] = true
	}
	for _, l := range n.Spec.Listeners {
		if port, err := ergo.ListenerPort(l.Address); err != nil || !ports[port] {
			bad("listener %q is not a container port of the Deployment", l.Address)
		}
	}

	conf := ""
	if i := slices.Index(ctr.Command, "--conf"); i >= 0 && i+1 < len(ctr.Command) {
		conf = ctr.Command[i+1]
	}
	if src := fileSource(pod, ctr, conf); src != (source{"ConfigMap", ergo.ConfigMapName(n), ergo.ConfigKey}) {
		bad("ergo reads its config from %q, which the Deployment fills from %s, want key %s of ConfigMap %s", conf, src,
			ergo.ConfigKey, ergo.ConfigMapName(n))
	}
	for what, file := range map[string]string{"datastore.path": cfg.Datastore.Path, "lock-file": cfg.LockFile} {
		if src := fileSource(pod, ctr, file); src.kind != "PersistentVolumeClaim" || src.name != ergo.PVCName(n) {
			bad("ircd.yaml %s %q is not on the claim %s but on %s", what, file, ergo.PVCName(n), src)
		}
	}
	return problems
}

// source is where a file in the container comes from: a key of a ConfigMap or Secret, or a claim.
type source struct{ kind, name, key string }

func (s source) String() string {
	switch {
	case s.kind == "":
		return "no volume"
	case s.key == "":
		return fmt.Sprintf("%s %s", s.kind, s.name)
	}
	return fmt.Sprintf("key %s of %s %s", s.key, s.kind, s.name)
}

// fileSource resolves a file path in the container to the volume source that provides it.
func fileSource(pod corev1.PodSpec, ctr corev1.Container, file string) source {
	if file == "" || !path.IsAbs(file) {
		return source{}
	}
	for _, m := range ctr.VolumeMounts {
		rel, ok := strings.CutPrefix(path.Clean(file), path.Clean(m.MountPath)+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name {
				continue
			}
			switch {
			case v.PersistentVolumeClaim != nil:
				return source{"PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName, ""}
			case v.ConfigMap != nil:
				return keyed("ConfigMap", v.ConfigMap.Name, v.ConfigMap.Items, rel)
			case v.Secret != nil:
				return keyed("Secret", v.Secret.SecretName, v.Secret.Items, rel)
			case v.Projected != nil:
				for _, p := range v.Projected.Sources {
					var s source
					if p.ConfigMap != nil {
						s = keyed("ConfigMap", p.ConfigMap.Name, p.ConfigMap.Items, rel)
					} else if p.Secret != nil {
						s = keyed("Secret", p.Secret.Name, p.Secret.Items, rel)
					}
					if s.kind != "" {
						return s
					}
				}
			}
		}
	}
	return source{}
}

// keyed finds the key projected to rel: an item's path, or with no items, the key named like the file.
func keyed(kind, name string, items []corev1.KeyToPath, rel string) source {
	if len(items) == 0 {
		if !strings.Contains(rel, "/") {
			return source{kind, name, rel}
		}
		return source{}
	}
	for _, it := range items {
		if path.Clean(it.Path) == rel {
			return source{kind, name, it.Key}
		}
	}
	return source{}
}

// deploymentEnv is the value of an environment variable of the CSV's (first) operator container.
func deploymentEnv(csv *operatorsv1alpha1.ClusterServiceVersion, name string) string {
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == name {
					return e.Value
				}
			}
		}
	}
	return ""
}
