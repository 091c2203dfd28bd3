package main

import (
	"flag"
	"fmt"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	iotv1alpha1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

// fieldManager is the field manager of fleetctl's server-side applies: the fields it sends are its own,
// and a field another manager set and fleetctl does not send is kept.
const fieldManager = "fleetctl"

// deploymentsGVR is the resource the Kubernetes commands act on.
var deploymentsGVR = iotv1alpha1.GroupVersion.WithResource("deployments")

// deploymentGVK is the kind they write.
var deploymentGVK = iotv1alpha1.GroupVersion.WithKind("Deployment")

// kubeOptions are the flags of the commands that talk to the Kubernetes API server (apply, delete,
// get): where the kubeconfig is and which namespace. The kubeconfig comes from the usual places:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the in-cluster service account.
type kubeOptions struct {
	kubeconfig, context, namespace string
	timeout                        time.Duration
}

func (o *kubeOptions) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file; $KUBECONFIG, then ~/.kube/config, then the in-cluster service account when empty.")
	fs.StringVar(&o.context, "context", "", "The kubeconfig context to use; its current context when empty.")
	fs.StringVar(&o.namespace, "namespace", "", "The Deployment's namespace; the kubeconfig context's namespace (else \"default\") when empty.")
	fs.StringVar(&o.namespace, "n", "", "Same as --namespace.")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "How long to wait for the API server.")
}

// clientConfig is the kubeconfig the flags and the environment name (read lazily: nothing is read
// until a method asks).
func (o *kubeOptions) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
}

// resolveNamespace is --namespace, else the context's namespace, else "default".
func (o *kubeOptions) resolveNamespace() (string, error) {
	if o.namespace != "" {
		return o.namespace, nil
	}
	ns, _, err := o.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	return ns, nil
}

// deployments is a client of the namespace's iot Deployments.
func (o *kubeOptions) deployments(namespace string) (dynamic.ResourceInterface, error) {
	cfg, err := o.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.Timeout = o.timeout
	cfg.UserAgent = "fleetctl"
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		return dc.Resource(deploymentsGVR), nil
	}
	return dc.Resource(deploymentsGVR).Namespace(namespace), nil
}
