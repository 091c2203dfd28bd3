// Command platform-operator-scorecard is the entry point of the platform-operator-scorecard image, the
// custom scorecard tests of the bundle (package tests). Like operator-sdk's scorecard-test it takes the
// test name as its argument, reads the bundle that scorecard mounts at /bundle, and prints a v1alpha3
// TestStatus as JSON. Tests that need a cluster use the pod's service account (or KUBECONFIG) and
// create nothing: every object goes through a server-side dry run in SCORECARD_NAMESPACE.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/test/scorecard/tests"
)

// bundleRoot is where scorecard mounts the bundle in a test pod.
const bundleRoot = "/bundle"

func main() {
	timeout := flag.Duration("timeout", 2*time.Minute, "How long a test may take.")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] TEST\ntests: %v\n", os.Args[0], tests.Names())
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	name := flag.Arg(0)

	bundle, err := apimanifests.GetBundleFromDir(bundleRoot)
	if err != nil {
		log.Fatalf("read the bundle at %s: %v", bundleRoot, err)
	}
	env := tests.Env{Bundle: bundle, Namespace: os.Getenv("SCORECARD_NAMESPACE")}
	if env.Namespace == "" {
		env.Namespace = "default"
	}
	if tests.NeedsCluster(name) {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			log.Fatalf("find the cluster: %v", err)
		}
		if env.Client, err = client.New(cfg, client.Options{Scheme: scheme.Scheme}); err != nil {
			log.Fatalf("create a client: %v", err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	out, err := json.MarshalIndent(tests.Run(ctx, name, env), "", "    ")
	if err != nil {
		log.Fatalf("encode the result: %v", err)
	}
	fmt.Println(string(out))
}
