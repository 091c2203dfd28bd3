package iot

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// newCredential is a DeviceCredential of device id from broker "fleet".
func newCredential(ns, name, id string, labels map[string]iotv1.LabelValue) *iotv1.DeviceCredential {
	return &iotv1.DeviceCredential{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: iotv1.DeviceCredentialSpec{Broker: "fleet", DeviceID: id, Labels: labels}}
}

var _ = Describe("DeviceCredential admission", func() {
	// The API server's rules and the Go functions the issuer runs (fleet.ValidDeviceID, auth.ValidLabels)
	// judge the same inputs: a table of both, so that neither can drift from the other.
	It("refuses exactly the device IDs fleet.ValidDeviceID refuses", func(ctx SpecContext) {
		ns := newNamespace()
		ids := []string{
			"pi-17", "a", "A_b-C", "_", "-", strings.Repeat("x", 128), "0123456789", // valid
			"", "pi.17", "pi 17", "pi*", ">", "pi/17", "é", "pi\n", "pi\t", strings.Repeat("x", 129), "pi$", "$SYS", "a.>",
		}
		valid := 0
		for i, id := range ids {
			err := k8s.Create(ctx, newCredential(ns, fmt.Sprintf("id-%d", i), id, nil), client.DryRunAll)
			want := fleet.ValidDeviceID(id)
			if want == nil {
				valid++
				Expect(err).NotTo(HaveOccurred(), "device ID %q is valid for the fleet", id)
			} else {
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "device ID %q is invalid for the fleet (%v); the API server said %v", id, want, err)
			}
		}
		Expect(valid).To(Equal(7)) // the positive controls are there
	})

	It("refuses exactly the credential labels auth.ValidLabels refuses", func(ctx SpecContext) {
		ns := newNamespace()
		many := map[string]string{}
		for i := range fleet.MaxLabels + 1 {
			many[fmt.Sprintf("k%d", i)] = "v"
		}
		most := map[string]string{}
		for i := range fleet.MaxLabels {
			most[fmt.Sprintf("k%d", i)] = "v"
		}
		sets := []map[string]string{
			{"site": "lyon"}, {"example.com/site": "lyon", "rack": "3"}, {"a.b-c.example/x_y.z": "A-b_c.9"}, {"site": ""},
			{strings.Repeat("k", 63): strings.Repeat("v", 63)}, {strings.Repeat("a", 253) + "/k": "v"}, most,
			{"site": "-lyon"}, {"site": "lyon-"}, {"site": strings.Repeat("v", 64)}, {"site": "ly on"}, {"-site": "x"},
			{strings.Repeat("k", 64): "x"}, {"a/b/c": "x"}, {"Example.com/site": "x"}, {"/site": "x"}, {"example.com/": "x"},
			{strings.Repeat("a", 254) + "/k": "v"}, {"": "x"}, {"site.": "x"}, {"ex_ample.com/site": "x"}, many,
		}
		valid := 0
		for i, set := range sets {
			labels := map[string]iotv1.LabelValue{}
			for k, v := range set {
				labels[k] = iotv1.LabelValue(v)
			}
			err := k8s.Create(ctx, newCredential(ns, fmt.Sprintf("labels-%d", i), "pi", labels), client.DryRunAll)
			want := auth.ValidLabels(set)
			if want == nil {
				valid++
				Expect(err).NotTo(HaveOccurred(), "labels %v are valid credential labels", set)
			} else {
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "labels %v are invalid (%v); the API server said %v", set, want, err)
			}
		}
		Expect(valid).To(Equal(7))
	})

	It("refuses any change of the spec but revoking, and undoing a revocation", func(ctx SpecContext) {
		ns := newNamespace()
		dc := newCredential(ns, "pi", "pi", map[string]iotv1.LabelValue{"site": "lyon"})
		Expect(k8s.Create(ctx, dc)).To(Succeed())
		for what, change := range map[string]func(*iotv1.DeviceCredential){
			"deviceID":       func(d *iotv1.DeviceCredential) { d.Spec.DeviceID = "other" },
			"broker":         func(d *iotv1.DeviceCredential) { d.Spec.Broker = "other" },
			"a label value":  func(d *iotv1.DeviceCredential) { d.Spec.Labels["site"] = "paris" },
			"labels removed": func(d *iotv1.DeviceCredential) { d.Spec.Labels = nil },
			"secretName set": func(d *iotv1.DeviceCredential) { d.Spec.SecretName = "elsewhere" },
			"expiresAfter set": func(d *iotv1.DeviceCredential) {
				d.Spec.ExpiresAfter = &metav1.Duration{Duration: 3600e9}
			},
		} {
			changed := dc.DeepCopy()
			change(changed)
			err := k8s.Update(ctx, changed)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "changing %s: %v", what, err)
		}
		By("revoking: the one change allowed (the control)")
		revoked := dc.DeepCopy()
		revoked.Spec.Revoked = true
		Expect(k8s.Update(ctx, revoked)).To(Succeed())
		undone := revoked.DeepCopy()
		undone.Spec.Revoked = false
		err := k8s.Update(ctx, undone)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "undoing the revocation: %v", err)
		Expect(err.Error()).To(ContainSubstring("cannot be undone"))
		Expect(k8s.Delete(ctx, revoked)).To(Succeed())
	})
})
