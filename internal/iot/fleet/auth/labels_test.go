package auth_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// TestCredentialLabels: labels issued into a device credential come back exactly (case included: JWT
// tags are lower-cased, Kubernetes labels are not) for that device, and not for another name, an
// untrusted signer, a viewer's key, an expired or a revoked credential; Trust lays them over the device's
// own labels and marks them as credential labels.
func TestCredentialLabels(t *testing.T) {
	a, err := auth.Init()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"site": "Lyon", "example.com/Zone": "North_1"}
	token := func(a *auth.Authority, r auth.Role, name string, expires time.Duration, labels map[string]string) string {
		t.Helper()
		creds, err := a.IssueWithLabels(r, name, expires, labels)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.ParseDecoratedJWT(creds)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	v, err := auth.NewVerifier(a.AccountJWT)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := token(a, auth.RoleDevice, "pi-1", 0, want)
	got, err := v.Labels("pi-1", good, now)
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("control: %v, %v; want %v", got, err, want)
	}
	if _, err := a.IssueWithLabels(auth.RoleViewer, "alice", 0, want); err == nil {
		t.Error("a viewer's credentials took labels")
	}
	stranger, _ := auth.Init()
	short := token(a, auth.RoleDevice, "pi-1", time.Second, want)
	for what, c := range map[string]struct {
		device, token string
		at            time.Time
		want          string
	}{
		"another device's":      {"pi-2", good, now, "not of device"},
		"an untrusted signer's": {"pi-1", token(stranger, auth.RoleDevice, "pi-1", 0, want), now, "not signed"},
		"expired":               {"pi-1", short, now.Add(time.Hour), "expired"},
		"none":                  {"pi-1", "", now, "no credential"},
		"not a JWT":             {"pi-1", "junk", now, "credential"},
	} {
		if _, err := v.Labels(c.device, c.token, c.at); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s credential: %v, want an error saying %q", what, err, c.want)
		}
	}
	uc, err := jwt.DecodeUserClaims(good)
	if err != nil {
		t.Fatal(err)
	}
	key := uc.Subject
	if err := a.Revoke(key, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	after, err := auth.NewVerifier(a.AccountJWT)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := after.Labels("pi-1", good, now); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a revoked credential: %v", err)
	}

	d := &fleet.DeviceInfo{ID: "pi-1", Labels: map[string]string{"site": "paris", "rack": "3"}, Credential: good,
		Previous: &fleet.DeviceLabels{Labels: map[string]string{"site": "paris"}, Credential: map[string]string{"site": "paris"}}}
	v.Trust(time.Now, nil)(d)
	if d.Labels["site"] != "Lyon" || d.Labels["rack"] != "3" || !maps.Equal(d.CredentialLabels, want) || !maps.Equal(d.Previous.Credential, want) {
		t.Errorf("trusted record: labels %v, credential %v, previous %+v", d.Labels, d.CredentialLabels, d.Previous)
	}
	view := d.Selection().View([]string{"site", "zone"})
	if view["site"] != "Lyon" || view["rack"] != "3" {
		t.Errorf("view %v", view)
	}
	bare := &fleet.DeviceInfo{ID: "pi-9", Labels: map[string]string{"site": "Lyon", "rack": "3"}}
	v.Trust(time.Now, nil)(bare)
	if view := bare.Selection().View([]string{"site"}); view["site"] != "" || view["rack"] != "3" {
		t.Errorf("a record without a credential: view %v, want rack only", view)
	}
}
