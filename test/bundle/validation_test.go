package bundle

import (
	"strings"
	"testing"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

// k8sVersion is the Kubernetes release the deprecated-API and OperatorHub validators judge the bundle
// against: the one the control plane of `make test` runs (K8S_VERSION).
const k8sVersion = "1.34"

// validators are every validator of operator-framework/api that applies to a bundle on this machine:
// the default ones (CSV, CRDs, bundle), and the optional ones operator-sdk's operatorframework suite runs
// (OperatorHub v2, capabilities, categories, good practices, deprecated APIs), plus the object and
// OperatorGroup checks. Left out: the deprecated "operatorhub" validator, which the first three replace
// (it only adds a warning saying so), the deprecated "community" validator (community-operators' own
// rules, now an external validator), and "multiarch", which inspects the images with docker or podman.
var validators = interfaces.Validators{
	validation.ClusterServiceVersionValidator,
	validation.CustomResourceDefinitionValidator,
	validation.BundleValidator,
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
	validation.GoodPracticesValidator,
	validation.AlphaDeprecatedAPIsValidator,
	validation.ObjectValidator,
	validation.OperatorGroupValidator,
}

// validate runs the validators and returns their errors and warnings.
func validate(b *apimanifests.Bundle) (errs, warns []string) {
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": k8sVersion})
	for _, res := range validators.Validate(objs...) {
		for _, e := range res.Errors {
			errs = append(errs, res.Name+": "+e.Error())
		}
		for _, w := range res.Warnings {
			warns = append(warns, res.Name+": "+w.Error())
		}
	}
	return errs, warns
}

func TestBundleValidation(t *testing.T) {
	errs, warns := validate(loadBundle(t))
	for _, e := range errs {
		t.Errorf("error: %s", e)
	}
	// Every warning fails: the operator's ClusterRole no longer holds the cronjobs, horizontalpodautoscalers
	// and poddisruptionbudgets rules the deprecated-API validator used to warn about (Catalyst deploys are
	// sent as the tenant), and the tenant ClusterRole grants no PodDisruptionBudgets.
	for _, w := range warns {
		if pdbRuleWarning(w) {
			continue
		}
		t.Errorf("warning: %s", w)
	}
}

// pdbRuleWarning is the one warning allowed: the deprecated-API validator warns about any rule on
// policy's poddisruptionbudgets, whatever the version, because policy/v1beta1 was removed in 1.25. The
// operator's rule is for the policy/v1 PodDisruptionBudget of a FleetBroker (docs/fleet-broker.md), the
// only one it makes; the Catalyst tenant role still grants none.
func pdbRuleWarning(w string) bool {
	return strings.Contains(w, "Migrate the API(s) for poddisruptionbudgets: ([\"ClusterServiceVersion.Spec.InstallStrategy.StrategySpec.Permissions[0].")
}

// TestValidatorsAreWired breaks the bundle in ways each optional validator exists to catch, so a
// validator that silently stopped running would show.
func TestValidatorsAreWired(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(b *apimanifests.Bundle)
		error string // substring of an expected error; empty when only a warning is expected
		warn  string // substring of an expected warning
	}{
		{
			name:  "category OperatorHub does not have",
			edit:  func(b *apimanifests.Bundle) { b.CSV.Annotations["categories"] = "IRC" },
			error: "standard categories",
		},
		{
			name:  "capability level that does not exist",
			edit:  func(b *apimanifests.Bundle) { b.CSV.Annotations["capabilities"] = "Full Autopilot" },
			error: "capabilities",
		},
		{
			name: "no icon",
			edit: func(b *apimanifests.Bundle) { b.CSV.Spec.Icon = nil },
			warn: "Icon",
		},
		{
			name: "no minKubeVersion",
			edit: func(b *apimanifests.Bundle) { b.CSV.Spec.MinKubeVersion = "" },
			warn: "minKubeVersion",
		},
		{
			name: "channel outside the naming convention",
			edit: func(b *apimanifests.Bundle) { b.Channels = []string{"alpha"}; b.DefaultChannel = "alpha" },
			warn: "naming convention",
		},
		{
			name: "container without resource requests",
			edit: func(b *apimanifests.Bundle) {
				spec := &b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
				spec.Containers[0].Resources.Requests = nil
			},
			warn: "resource requests",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := loadBundle(t)
			tt.edit(b)
			errs, warns := validate(b)
			if tt.error != "" && !containsSubstring(errs, tt.error) {
				t.Errorf("no error about %q; errors %q", tt.error, errs)
			}
			if tt.warn != "" && !containsSubstring(warns, tt.warn) {
				t.Errorf("no warning about %q; warnings %q", tt.warn, warns)
			}
		})
	}
}

func containsSubstring(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
