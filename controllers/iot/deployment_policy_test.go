package iot

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

func TestParseFleetPolicy(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
		rules   []string
	}{
		{in: "", rules: nil},
		{in: " team-a = site:lyon | paris ; *=* ", rules: []string{"team-a=site:lyon|paris", "*=*"}},
		{in: "team-a=example.com/site:lyon", rules: []string{"team-a=example.com/site:lyon"}},
		{in: "team-a", wantErr: "want NAMESPACE="},
		{in: "Team_A=site:lyon", wantErr: "neither a namespace"},
		{in: "team-a=site", wantErr: "label key"},
		{in: "team-a=bad key:x", wantErr: "label key"},
		{in: "team-a=site:", wantErr: "not a label value"},
		{in: "team-a=site:lyon||paris", wantErr: "not a label value"},
		{in: "team-a=site:*", wantErr: "not a label value"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParseFleetPolicy(tt.in)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			var got []string
			for _, r := range p.rules {
				got = append(got, r.text)
			}
			if strings.Join(got, ";") != strings.Join(tt.rules, ";") {
				t.Errorf("rules %q, want %q", got, tt.rules)
			}
		})
	}
}

func sel(labels map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
}

func in(key string, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}
}

func TestFleetPolicyAllows(t *testing.T) {
	policy, err := ParseFleetPolicy("team-a=site:lyon|paris;team-a=tier:edge;ops=*;*=site:shared")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		policy  FleetPolicy
		ns      string
		sel     *metav1.LabelSelector
		allowed bool
		msg     string // part of the refusal
	}{
		{"matchLabels on an allowed value", policy, "team-a", sel(map[string]string{"site": "lyon"}), true, ""},
		{"In within the allowed values", policy, "team-a", sel(nil, in("site", "lyon", "paris")), true, ""},
		{"the second rule of the namespace", policy, "team-a", sel(map[string]string{"tier": "edge", "x": "y"}), true, ""},
		{"an allowed bound ANDed with anything", policy, "team-a", sel(map[string]string{"site": "lyon"},
			metav1.LabelSelectorRequirement{Key: "site", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}), true, ""},
		{"a value outside the rule", policy, "team-a", sel(map[string]string{"site": "berlin"}), false, `rule "team-a=site:lyon|paris"`},
		{"In with one value outside", policy, "team-a", sel(nil, in("site", "lyon", "berlin")), false, `rule "team-a=tier:edge"`},
		{"NotIn bounds nothing", policy, "team-a", sel(nil, metav1.LabelSelectorRequirement{Key: "site", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"berlin"}}), false, "site"},
		{"Exists bounds nothing", policy, "team-a", sel(nil, metav1.LabelSelectorRequirement{Key: "site", Operator: metav1.LabelSelectorOpExists}), false, "site"},
		{"another key", policy, "team-a", sel(map[string]string{"region": "lyon"}), false, "site"},
		{"every device refused", policy, "team-a", sel(nil), false, "targetSelector {} (every device of the fleet)"},
		{"every device allowed by NAMESPACE=*", policy, "ops", sel(nil), true, ""},
		{"a namespace named gets no * entry", policy, "team-a", sel(map[string]string{"site": "shared"}), false, "team-a=site:lyon|paris"},
		{"an unnamed namespace gets the * entries", policy, "team-b", sel(map[string]string{"site": "shared"}), true, ""},
		{"an unnamed namespace outside the * entries", policy, "team-b", sel(map[string]string{"site": "lyon"}), false, `rule "*=site:shared"`},
		{"the empty policy refuses a bounded selector", FleetPolicy{}, "team-a", sel(map[string]string{"site": "lyon"}), false, "has no rule for namespace team-a"},
		{"the empty policy refuses every device", FleetPolicy{}, "team-a", sel(nil), false, "has no rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := tt.policy.Allows(tt.ns, tt.sel)
			if ok != tt.allowed {
				t.Fatalf("Allows = %t (%s), want %t", ok, msg, tt.allowed)
			}
			if !strings.Contains(msg, tt.msg) {
				t.Errorf("message %q lacks %q", msg, tt.msg)
			}
		})
	}
}

func TestImagePolicyCheck(t *testing.T) {
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	regs, err := ParseRegistries(" registry.example.com , ghcr.io/team-a ,docker.io/library, localhost:5000")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		policy ImagePolicy
		image  string
		refuse string // part of the refusal; "" admits
	}{
		{"no policy admits anything", ImagePolicy{}, "evil.example/x:1", ""},
		{"an allowed host", ImagePolicy{Registries: regs}, "registry.example.com/app:1", ""},
		{"an allowed host, any port", ImagePolicy{Registries: regs}, "registry.example.com:8443/app:1", ""},
		{"a host whose name starts like an allowed one", ImagePolicy{Registries: regs}, "registry.example.com.evil.example/app:1", "not from a registry"},
		{"the allowed host as a path", ImagePolicy{Registries: regs}, "evil.example/registry.example.com/app:1", "registry evil.example"},
		{"an allowed path prefix", ImagePolicy{Registries: regs}, "ghcr.io/team-a/app:1", ""},
		{"the path prefix is whole components", ImagePolicy{Registries: regs}, "ghcr.io/team-ab/app:1", "not from a registry"},
		{"another path on the host", ImagePolicy{Registries: regs}, "ghcr.io/team-b/app:1", "not from a registry"},
		{"an official Docker Hub image", ImagePolicy{Registries: regs}, "nginx:1.27", ""},
		{"a Docker Hub image of a user", ImagePolicy{Registries: regs}, "someone/nginx:1.27", "registry docker.io, repository someone/nginx"},
		{"a port-qualified entry wants that port", ImagePolicy{Registries: regs}, "localhost:5000/app", ""},
		{"another port of a port-qualified entry", ImagePolicy{Registries: regs}, "localhost:5001/app", "not from a registry"},
		{"digest required refuses a tag", ImagePolicy{RequireDigest: true}, "registry.example.com/app:1", "not pinned by digest"},
		{"digest required admits a digest", ImagePolicy{RequireDigest: true}, "registry.example.com/app" + digest, ""},
		{"digest required admits a tag and a digest", ImagePolicy{RequireDigest: true}, "registry.example.com/app:1" + digest, ""},
		{"a malformed digest", ImagePolicy{RequireDigest: true}, "registry.example.com/app@sha256:abc", "is not sha256"},
		{"both: allowed and pinned", ImagePolicy{Registries: regs, RequireDigest: true}, "registry.example.com/app" + digest, ""},
		{"both: pinned elsewhere", ImagePolicy{Registries: regs, RequireDigest: true}, "evil.example/app" + digest, "not from a registry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.policy.Check(tt.image)
			if (msg == "") != (tt.refuse == "") || !strings.Contains(msg, tt.refuse) {
				t.Errorf("Check(%q) = %q, want %q", tt.image, msg, tt.refuse)
			}
		})
	}
}

func TestParseRegistries(t *testing.T) {
	for _, bad := range []string{"https://registry.example.com", "Registry.example.com", "registry.example.com/Team", "a b"} {
		if _, err := ParseRegistries(bad); err == nil {
			t.Errorf("ParseRegistries(%q) accepted", bad)
		}
	}
	if got, err := ParseRegistries(""); err != nil || got != nil {
		t.Errorf("ParseRegistries(\"\") = %v, %v; want none (any registry)", got, err)
	}
}

func TestPolicyViolationsNameEveryRefusal(t *testing.T) {
	fleetPolicy, err := ParseFleetPolicy("team-a=site:lyon")
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Fleet: fleetPolicy, Images: ImagePolicy{Registries: []string{"registry.example.com"}}}
	d := &iotv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}, Spec: iotv1.DeploymentSpec{
		TargetSelector: metav1.LabelSelector{MatchLabels: map[string]string{"site": "lyon"}},
		Score: iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{
			{Name: "app", Image: "registry.example.com/app:1"}, {Name: "side", Image: "registry.example.com/side:1"},
		}}},
	}}
	if v := p.Violations(d); len(v) != 0 {
		t.Fatalf("the control is refused: %q", v)
	}
	d.Spec.TargetSelector.MatchLabels["site"] = "paris"
	d.Spec.Score.PodmanV0.Services[1].Image = "evil.example/side:1"
	v := p.Violations(d)
	if len(v) != 2 || !strings.Contains(v[0], `rule "team-a=site:lyon"`) || !strings.Contains(v[1], "service side: image evil.example/side:1") {
		t.Errorf("violations %q, want the selector's rule and service side's image", v)
	}
	d.Spec.TargetSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "site", Operator: "Near"}}}
	if v := p.Violations(d); len(v) != 1 {
		t.Errorf("an unparsable selector is the controller's InvalidSelector, not a policy violation: %q", v)
	}
}
