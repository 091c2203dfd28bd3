package postgres

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

func TestSettingsFromSecret(t *testing.T) {
	full := map[string][]byte{"host": []byte(" db.example \n"), "port": []byte("5432"), "user": []byte("admin"), "password": []byte(" p w ")}
	tests := []struct {
		name    string
		data    map[string][]byte
		edit    func(map[string][]byte)
		want    Settings
		missing []string
		invalid bool
	}{
		{name: "defaults", data: full, want: Settings{Host: "db.example", Port: 5432, User: "admin", Password: " p w ", SSLMode: "prefer", Database: "postgres"}},
		{name: "sslmode and database", data: full, edit: func(d map[string][]byte) { d["sslmode"] = []byte("verify-full"); d["database"] = []byte("ops") },
			want: Settings{Host: "db.example", Port: 5432, User: "admin", Password: " p w ", SSLMode: "verify-full", Database: "ops"}},
		{name: "empty", data: map[string][]byte{}, missing: []string{"host", "user", "password", "port"}},
		{name: "empty password", data: full, edit: func(d map[string][]byte) { d["password"] = nil }, missing: []string{"password"}},
		{name: "port not a number", data: full, edit: func(d map[string][]byte) { d["port"] = []byte("fivefour") }, invalid: true},
		{name: "port out of range", data: full, edit: func(d map[string][]byte) { d["port"] = []byte("70000") }, invalid: true},
		{name: "unknown sslmode", data: full, edit: func(d map[string][]byte) { d["sslmode"] = []byte("sometimes") }, invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tt.data {
				data[k] = v
			}
			if tt.edit != nil {
				tt.edit(data)
			}
			got, err := SettingsFromSecret(data)
			var se *SecretError
			if tt.missing != nil || tt.invalid {
				if !errors.As(err, &se) {
					t.Fatalf("err = %v, want a SecretError", err)
				}
				if !reflect.DeepEqual(se.Missing, tt.missing) || (len(se.Invalid) > 0) != tt.invalid {
					t.Errorf("SecretError %+v, want missing %v, invalid %v", se, tt.missing, tt.invalid)
				}
				if strings.Contains(err.Error(), "p w") {
					t.Errorf("error %q shows the password", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("SettingsFromSecret = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestConnConfigAndURL(t *testing.T) {
	s := Settings{Host: "db.example", Port: 5433, User: "o'neil", Password: `p@ss w'rd\`, SSLMode: "disable", Database: "app db"}
	cfg, err := s.ConnConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != s.Host || cfg.Port != 5433 || cfg.User != s.User || cfg.Password != s.Password || cfg.Database != s.Database || cfg.TLSConfig != nil {
		t.Errorf("ConnConfig = %s:%d %q %q %q tls=%v", cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database, cfg.TLSConfig != nil)
	}
	if got, want := s.URL(), `postgresql://o%27neil:p%40ss%20w%27rd%5C@db.example:5433/app%20db?sslmode=disable`; got != want {
		t.Errorf("URL = %s, want %s", got, want)
	}
	v6 := Settings{Host: "::1", Port: 5432, User: "u", Password: "p", SSLMode: "prefer", Database: "d"}
	if got := v6.URL(); got != "postgresql://u:p@[::1]:5432/d?sslmode=prefer" {
		t.Errorf("URL = %s", got)
	}
}

func TestSecret(t *testing.T) {
	db := &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Name: "test2", Namespace: "homelab", UID: "u1"}}
	server := Settings{Host: "db.example", Port: 5432, User: "admin", Password: "adminpw", SSLMode: "require", Database: "postgres"}
	s := Secret(db, homelabv1.GroupVersion.WithKind("PostgresDatabase"), server, "homelab_test2_abc", "pw", "")
	if s.Name != "test2-postgres" || s.Namespace != "homelab" || s.Kind != "Secret" || !labels.IsManaged(s.Labels) {
		t.Errorf("Secret metadata %+v", s.ObjectMeta)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "u1" || s.OwnerReferences[0].Kind != "PostgresDatabase" || !*s.OwnerReferences[0].Controller {
		t.Errorf("owner references %+v", s.OwnerReferences)
	}
	want := map[string]string{"host": "db.example", "port": "5432", "user": "homelab_test2_abc", "password": "pw",
		"database": "homelab_test2_abc", "sslmode": "require",
		"url": "postgresql://homelab_test2_abc:pw@db.example:5432/homelab_test2_abc?sslmode=require"}
	got := map[string]string{}
	for k, v := range s.Data {
		got[k] = string(v)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("data %v, want %v", got, want)
	}
	if strings.Contains(string(s.Data["url"]), "adminpw") || s.Annotations != nil {
		t.Errorf("the Secret holds the operator's password or an annotation: %+v", s)
	}
	if r := Secret(db, homelabv1.GroupVersion.WithKind("PostgresDatabase"), server, "r", "pw", "2026-01"); r.Annotations[AnnotationRotation] != "2026-01" {
		t.Errorf("rotation annotation %v", r.Annotations)
	}
}

func TestKeptPassword(t *testing.T) {
	live := func(pw, rotation string) *corev1.Secret {
		s := &corev1.Secret{Data: map[string][]byte{"password": []byte(pw)}}
		if rotation != "" {
			s.Annotations = map[string]string{AnnotationRotation: rotation}
		}
		return s
	}
	tests := []struct {
		name     string
		live     *corev1.Secret
		rotation string
		want     string
		ok       bool
	}{
		{name: "no secret", live: nil},
		{name: "kept", live: live("pw", ""), want: "pw", ok: true},
		{name: "empty password", live: live("", "")},
		{name: "rotation asked", live: live("pw", ""), rotation: "now"},
		{name: "rotation answered", live: live("pw", "now"), rotation: "now", want: "pw", ok: true},
		{name: "rotation asked again", live: live("pw", "now"), rotation: "later"},
		{name: "rotation annotation removed", live: live("pw", "now"), rotation: "", want: "pw", ok: true},
	}
	for _, tt := range tests {
		got, ok := KeptPassword(tt.live, tt.rotation)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: KeptPassword = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
