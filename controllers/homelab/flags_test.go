package homelab

import (
	"flag"
	"strings"
	"testing"
)

// mustParseDomainPolicy is ParseDomainPolicy for a policy a test wrote.
func mustParseDomainPolicy(s string) DomainPolicy {
	p, err := ParseDomainPolicy(s)
	if err != nil {
		panic(err)
	}
	return p
}

// The domain policy is parsed with the other flags, before anything is set up: a malformed one is an
// error of Options, which main.go returns before it builds a manager or contacts the API server (no
// API server exists in this test).
func TestFlagsParseDomainPolicyUpFront(t *testing.T) {
	options := func(policy string) (Options, error) {
		fs := flag.NewFlagSet("operator", flag.ContinueOnError)
		f := BindFlags(fs)
		if err := fs.Parse([]string{"--" + FlagDomainPolicy + "=" + policy}); err != nil {
			t.Fatal(err)
		}
		return f.Options(2)
	}
	if _, err := options("team-a"); err == nil || !strings.Contains(err.Error(), "--"+FlagDomainPolicy) {
		t.Errorf("a malformed policy: Options error %v, want one naming --%s", err, FlagDomainPolicy)
	}
	// Control: a well-formed policy passes, parsed.
	opts, err := options("team-a=example.com")
	if err != nil {
		t.Fatal(err)
	}
	if ok, msg := opts.DomainPolicy.Allows("team-a", "www.example.com", "letsencrypt"); !ok {
		t.Errorf("the parsed policy refuses what it allows: %s", msg)
	}
	if ok, _ := opts.DomainPolicy.Allows("team-b", "www.example.com", "letsencrypt"); ok {
		t.Error("the parsed policy allows another namespace")
	}
}
