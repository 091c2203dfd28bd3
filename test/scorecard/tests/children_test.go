package tests

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
)

func network() *ircv1.ErgoNetwork {
	return &ircv1.ErgoNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "net", Namespace: "ns", UID: "uid"},
		Spec: ircv1.ErgoNetworkSpec{
			Hostname:        "irc.example.com",
			OperCredentials: &ircv1.OperCredentials{SecretName: "oper"},
			Listeners:       []ircv1.Listener{{Address: ":6697", TLS: true}, {Address: ":6667"}},
			TLS:             &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "ca"}},
		},
	}
}

func TestCheckErgoConfig(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(n *ircv1.ErgoNetwork, d *appsv1.Deployment)
		rendered func(n *ircv1.ErgoNetwork) []byte
		problems []string // substrings, one per expected problem
	}{
		{name: "the builders agree"},
		{
			name: "certificate not mounted",
			edit: func(_ *ircv1.ErgoNetwork, d *appsv1.Deployment) {
				p := d.Spec.Template.Spec.Volumes[0].Projected
				p.Sources = p.Sources[:1]
			},
			problems: []string{`reads /etc/ergo/tls/tls.`, `reads /etc/ergo/tls/tls.`},
		},
		{
			name: "data volume is not the claim",
			edit: func(_ *ircv1.ErgoNetwork, d *appsv1.Deployment) {
				d.Spec.Template.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
			},
			problems: []string{"is not on the claim net-data", "is not on the claim net-data"},
		},
		{
			name: "config read from elsewhere",
			edit: func(_ *ircv1.ErgoNetwork, d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Command = []string{"/ircd-bin/ergo", "run", "--conf", "/ircd/ircd.yaml"}
			},
			problems: []string{`reads its config from "/ircd/ircd.yaml"`},
		},
		{
			name:     "spec changed after rendering",
			edit:     func(n *ircv1.ErgoNetwork, _ *appsv1.Deployment) { n.Spec.Hostname = "other.example.com" },
			problems: []string{`server.name is "irc.example.com"`, `network.name is "irc.example.com"`},
		},
		{
			name: "a listener the spec does not have",
			rendered: func(n *ircv1.ErgoNetwork) []byte {
				c := ergo.BuildConfig(n, true)
				c.Server.Listeners[":7000"] = ergo.ListenerConfig{}
				out, _ := ergo.RenderConfig(c)
				return out
			},
			problems: []string{`listens on ":7000"`},
		},
		{
			name:     "not ergo's config",
			rendered: func(*ircv1.ErgoNetwork) []byte { return []byte("server:\n  colour: x\n") },
			problems: []string{"does not read back"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := network()
			rendered, err := ergo.RenderConfig(ergo.BuildConfig(n, true))
			if err != nil {
				t.Fatal(err)
			}
			if tt.rendered != nil {
				rendered = tt.rendered(n)
			}
			d := ergo.Deployment(n, ergo.Options{}, "digest")
			if tt.edit != nil {
				tt.edit(n, d)
			}
			got := CheckErgoConfig(n, rendered, d)
			if len(got) != len(tt.problems) {
				t.Fatalf("problems %q, want %d", got, len(tt.problems))
			}
			for i, want := range tt.problems {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], want)
				}
			}
		})
	}
}
