package objectstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/testutil/pki"
)

const testSecret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"

func validConfig() Config {
	return Config{Endpoint: "https://s3.example.com", Bucket: "backups", Prefix: "platform/prod", Region: "eu-west-1",
		Credentials: Credentials{AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: testSecret}}
}

func TestConfigValidate(t *testing.T) {
	ca, err := pki.NewCA("store-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string // substring of the error; empty: valid
	}{
		{"valid", func(*Config) {}, ""},
		{"https by default", func(c *Config) { c.Endpoint = "s3.example.com:9000" }, ""},
		{"http when the URL says so", func(c *Config) { c.Endpoint = "http://127.0.0.1:7070" }, ""},
		{"empty prefix", func(c *Config) { c.Prefix = "" }, ""},
		{"CA bundle", func(c *Config) { c.CABundle = ca.PEM }, ""},
		{"SSE-S3", func(c *Config) { c.Encryption = &Encryption{Mode: SSES3} }, ""},
		{"SSE-KMS", func(c *Config) { c.Encryption = &Encryption{Mode: SSEKMS, KMSKeyID: "alias/backups"} }, ""},
		{"no endpoint", func(c *Config) { c.Endpoint = "" }, "endpoint is empty"},
		{"ftp", func(c *Config) { c.Endpoint = "ftp://s3.example.com" }, `scheme "ftp"`},
		{"path in endpoint", func(c *Config) { c.Endpoint = "https://s3.example.com/bucket" }, "scheme://host[:port] only"},
		{"user info in endpoint", func(c *Config) { c.Endpoint = "https://AKIAEXAMPLE:" + testSecret + "@s3.example.com" }, "user information"},
		{"unparsable endpoint with a secret", func(c *Config) { c.Endpoint = "https://x:" + testSecret + "@[::1" }, "not a URL"},
		{"no host", func(c *Config) { c.Endpoint = "https://" }, "no host"},
		{"short bucket", func(c *Config) { c.Bucket = "ab" }, "3 to 63"},
		{"upper-case bucket", func(c *Config) { c.Bucket = "Backups" }, "lowercase"},
		{"bucket with ..", func(c *Config) { c.Bucket = "a..b" }, `".."`},
		{"prefix with leading slash", func(c *Config) { c.Prefix = "/platform" }, "empty segment"},
		{"prefix with ..", func(c *Config) { c.Prefix = "platform/../other" }, "not allowed"},
		{"no access key id", func(c *Config) { c.Credentials.AccessKeyID = "" }, "access key id is empty"},
		{"no secret", func(c *Config) { c.Credentials.SecretAccessKey = "" }, "secret access key is empty"},
		{"CA bundle not PEM", func(c *Config) { c.CABundle = []byte("not a certificate") }, "not PEM"},
		{"CA bundle with a key", func(c *Config) {
			c.CABundle = []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
		}, `"PRIVATE KEY" block`},
		{"KMS key with SSE-S3", func(c *Config) { c.Encryption = &Encryption{Mode: SSES3, KMSKeyID: "k"} }, "only for SSE-KMS"},
		{"SSE-KMS without key", func(c *Config) { c.Encryption = &Encryption{Mode: SSEKMS} }, "needs a KMS key id"},
		{"SSE-C", func(c *Config) { c.Encryption = &Encryption{Mode: "SSE-C"} }, `"SSE-C" is neither`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.change(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				if _, err := New(c); err != nil {
					t.Fatalf("New() = %v, want a client", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Fatalf("Validate()'s error names the secret: %v", err)
			}
			if _, nerr := New(c); nerr == nil || strings.Contains(nerr.Error(), testSecret) {
				t.Fatalf("New() = %v, want the validation error without the secret", nerr)
			}
		})
	}
}

func TestCredentialsNeverFormat(t *testing.T) {
	c := validConfig()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, c); strings.Contains(out, testSecret) || strings.Contains(out, "AKIAEXAMPLE") {
			t.Errorf("%s of a Config prints a credential: %s", verb, out)
		}
	}
	// Control: the values are there to be printed if Credentials lost its String method.
	if out := fmt.Sprintf("%v", struct{ A, S string }{c.Credentials.AccessKeyID, c.Credentials.SecretAccessKey}); !strings.Contains(out, testSecret) {
		t.Fatalf("control: %q lacks the secret", out)
	}
}

func TestEndpointScheme(t *testing.T) {
	for raw, secure := range map[string]bool{"s3.example.com": true, "https://s3.example.com": true, "http://127.0.0.1:7070": false} {
		ep, err := parseEndpoint(raw)
		if err != nil || ep.secure != secure {
			t.Errorf("parseEndpoint(%q) = %+v, %v; want secure=%v", raw, ep, err, secure)
		}
	}
}
