package ergo

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestListenerPort(t *testing.T) {
	tests := []struct {
		address string
		want    int32
		wantErr bool
	}{
		{address: ":6667", want: 6667},
		{address: ":6697", want: 6697},
		{address: "0.0.0.0:6667", want: 6667},
		{address: "[::]:6697", want: 6697},
		{address: "irc.example.com:7000", want: 7000},
		{address: ":1", want: 1},
		{address: ":65535", want: 65535},
		{address: ":0", wantErr: true},
		{address: ":65536", wantErr: true},
		{address: ":-1", wantErr: true},
		{address: ":+6667", wantErr: true},
		{address: ":0x1a0b", wantErr: true},
		{address: ":irc", wantErr: true},
		{address: ":", wantErr: true},
		{address: "6667", wantErr: true},
		{address: "", wantErr: true},
		{address: "::6667", wantErr: true},
		{address: "[::]6697", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			got, err := ListenerPort(tt.address)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ListenerPort(%q) error = %v, wantErr %v", tt.address, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ListenerPort(%q) = %d, want %d", tt.address, got, tt.want)
			}
		})
	}
}

func TestServicePorts(t *testing.T) {
	tests := []struct {
		name      string
		listeners []ircv1.Listener
		want      []ircv1.ListenerStatus
	}{
		{
			name:      "one plaintext listener",
			listeners: []ircv1.Listener{{Address: ":6667"}},
			want:      []ircv1.ListenerStatus{{Name: "irc-6667", Port: 6667}},
		},
		{
			name:      "spec order is kept",
			listeners: []ircv1.Listener{{Address: ":6697", TLS: true}, {Address: "[::]:6667"}},
			want:      []ircv1.ListenerStatus{{Name: "ircs-6697", Port: 6697, TLS: true}, {Name: "irc-6667", Port: 6667}},
		},
		{
			name:      "longest port name",
			listeners: []ircv1.Listener{{Address: ":65535", TLS: true}},
			want:      []ircv1.ListenerStatus{{Name: "ircs-65535", Port: 65535, TLS: true}},
		},
		{
			name:      "duplicate and broken listeners are left out",
			listeners: []ircv1.Listener{{Address: ":6667"}, {Address: "0.0.0.0:6667", TLS: true}, {Address: "nonsense"}},
			want:      []ircv1.ListenerStatus{{Name: "irc-6667", Port: 6667}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := minimalNetwork()
			n.Spec.Listeners = tt.listeners
			got := ServicePorts(n)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ServicePorts = %+v, want %+v", got, tt.want)
			}
			for _, p := range got {
				if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
					t.Errorf("port name %q is not an IANA_SVC_NAME: %v", p.Name, errs)
				}
			}
		})
	}
}

func TestTLSListenerPort(t *testing.T) {
	tests := []struct {
		name      string
		listeners []ircv1.Listener
		want      int32
		wantOK    bool
	}{
		{name: "no tls listener", listeners: []ircv1.Listener{{Address: ":6667"}}},
		{name: "first tls listener wins", listeners: []ircv1.Listener{{Address: ":6667"}, {Address: ":6697", TLS: true}, {Address: ":7000", TLS: true}}, want: 6697, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := minimalNetwork()
			n.Spec.Listeners = tt.listeners
			got, ok := TLSListenerPort(n)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("TLSListenerPort = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
