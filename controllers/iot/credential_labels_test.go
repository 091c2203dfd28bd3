package iot

import (
	"context"
	"fmt"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// nsCred's policy is site:cred-lyon: only credential labels may give a device that label.
const nsCred = "policy-credential"

// credential is the user JWT of a device credential issued by a with labels.
func credential(a *auth.Authority, device string, labels map[string]string) string {
	GinkgoHelper()
	creds, err := a.IssueWithLabels(auth.RoleDevice, device, 0, labels)
	Expect(err).NotTo(HaveOccurred())
	token, err := jwt.ParseDecoratedJWT(creds)
	Expect(err).NotTo(HaveOccurred())
	return token
}

var _ = Describe("iot Deployment in a namespace whose policy names a label key", func() {
	It("targets only the devices whose credentials carry the label, whatever devices say of themselves", func(ctx SpecContext) {
		ensureNamespace(ctx, nsCred)
		site := map[string]string{"site": "cred-lyon"}
		stranger, err := auth.Init() // an authority the operator does not trust
		Expect(err).NotTo(HaveOccurred())
		devices := map[string]fleet.DeviceInfo{
			// The control: its credential carries the label (it also says so itself).
			"cred-honest": {Labels: site, Credential: credential(suiteAuthority, "cred-honest", site)},
			// Its credential carries no label: it only says so itself.
			"cred-liar": {Labels: site, Credential: credential(suiteAuthority, "cred-liar", nil)},
			// No credential in its record at all.
			"cred-bare": {Labels: site},
			// A credential of the label, signed by an authority the operator does not trust.
			"cred-forger": {Labels: site, Credential: credential(stranger, "cred-forger", site)},
			// The honest device's credential, copied into another device's record.
			"cred-copier": {Labels: site, Credential: credential(suiteAuthority, "cred-honest", site)},
			// Its credential says site=cred-paris: credential labels win over its own site=cred-lyon.
			"cred-other": {Labels: site, Credential: credential(suiteAuthority, "cred-other", map[string]string{"site": "cred-paris"})},
		}
		for id, info := range devices {
			info.ID = id
			dev := fleettest.StartDeviceInfo(suiteCtx, fleetStore, info, nil)
			DeferCleanup(dev.Stop)
		}
		d := withSelector(fleettest.Deployment(nsCred, "web", "", "registry.example/web:1"), site)
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(func() iotv1.Aggregate { return get(ctx, d).Status.Aggregate }).Should(Equal(iotv1.Aggregate{MatchedDevices: 1, Succeeded: 1, Updated: 1}))
		key := fleet.DeploymentKey{Namespace: nsCred, Name: "web"}
		_, err = fleetStore.Desired.Get(ctx, fleet.DesiredKey("cred-honest", key))
		Expect(err).NotTo(HaveOccurred(), "the control: the device whose credential carries the label is targeted")
		Consistently(func(g Gomega) {
			for id := range devices {
				if id == "cred-honest" {
					continue
				}
				_, err := fleetStore.Desired.Get(context.Background(), fleet.DesiredKey(id, key))
				g.Expect(err).To(MatchError(jetstream.ErrKeyNotFound), "device %s was targeted", id)
			}
			g.Expect(get(ctx, d).Status.Aggregate.MatchedDevices).To(BeEquivalentTo(1))
		}, "2s").Should(Succeed())
	})
})

// startCredentialFleet is fleettest.StartFleet with each device's label fleet=<label> in its
// credentials too (issued by the suite's authority), for namespaces whose policy names the key fleet.
func startCredentialFleet(prefix, label string, n int) []*fleettest.Device {
	GinkgoHelper()
	var out []*fleettest.Device
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		l := map[string]string{"fleet": label}
		out = append(out, fleettest.StartDeviceInfo(suiteCtx, fleetStore, fleet.DeviceInfo{ID: id, Labels: l, Credential: credential(suiteAuthority, id, l)}, nil))
	}
	return out
}
