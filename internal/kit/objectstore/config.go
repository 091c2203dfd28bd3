package objectstore

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Config describes one S3-compatible store and where in it the operator's backups live.
type Config struct {
	// Endpoint is the store's URL, such as https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:7070. A
	// URL without a scheme is https; plain http only when the URL says so.
	Endpoint string `json:"endpoint"`
	// Bucket is the bucket the backups are written to; it must exist.
	Bucket string `json:"bucket"`
	// Prefix is the path inside the bucket under which every key is written (no leading or trailing
	// slash); empty means the bucket's root.
	Prefix string `json:"prefix,omitempty"`
	// Region is the store's region, for the request signature; empty lets the client ask the store.
	Region string `json:"region,omitempty"`
	// Credentials are the access key pair; never printed (Credentials formats as redacted).
	Credentials Credentials `json:"-"`
	// CABundle is PEM certificates the store's serving certificate must chain to, in place of the
	// system's roots; empty uses the system's.
	CABundle []byte `json:"-"`
	// Encryption asks the store to encrypt what is written; nil writes without asking.
	Encryption *Encryption `json:"encryption,omitempty"`
}

// Credentials are an S3 access key pair. Formatting them (fmt's verbs, %#v included) prints neither value.
type Credentials struct {
	// AccessKeyID is the access key's id.
	AccessKeyID string
	// SecretAccessKey is the access key's secret.
	SecretAccessKey string
}

// String hides both values: credentials must never reach a log, an event or a status.
func (Credentials) String() string { return "[redacted credentials]" }

// GoString is String, so that %#v prints no secret either.
func (c Credentials) GoString() string { return c.String() }

// EncryptionMode is the kind of server-side encryption the store is asked for.
type EncryptionMode string

const (
	// SSES3 is encryption with keys the store manages (x-amz-server-side-encryption: AES256).
	SSES3 EncryptionMode = "SSE-S3"
	// SSEKMS is encryption with a key of the store's key management service, named by KMSKeyID.
	SSEKMS EncryptionMode = "SSE-KMS"
)

// Encryption is the server-side encryption asked for on every object written.
type Encryption struct {
	// Mode is SSE-S3 or SSE-KMS.
	Mode EncryptionMode `json:"mode"`
	// KMSKeyID is the key's id for SSE-KMS; empty with SSE-S3.
	KMSKeyID string `json:"kmsKeyID,omitempty"`
}

// endpoint is a validated Endpoint: host[:port] and whether to use TLS.
type endpoint struct {
	host   string
	secure bool
}

// parseEndpoint checks Endpoint. Its errors never quote the URL: a URL may carry user information
// (https://key:secret@host), which is refused without being repeated.
func parseEndpoint(raw string) (endpoint, error) {
	if strings.TrimSpace(raw) == "" {
		return endpoint{}, errors.New("endpoint is empty")
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return endpoint{}, errors.New("endpoint is not a URL")
	}
	if u.User != nil {
		return endpoint{}, errors.New("endpoint must not carry user information: give the credentials as credentials")
	}
	var secure bool
	switch u.Scheme {
	case "https":
		secure = true
	case "http":
	default:
		return endpoint{}, fmt.Errorf("endpoint scheme %q is neither https nor http", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return endpoint{}, errors.New("endpoint has no host")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return endpoint{}, fmt.Errorf("endpoint must be scheme://host[:port] only; put paths in prefix (host %s)", u.Host)
	}
	return endpoint{host: u.Host, secure: secure}, nil
}

// Validate reports, in one error, everything wrong with the configuration. No error names a credential.
func (c Config) Validate() error {
	var errs []error
	if _, err := parseEndpoint(c.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if err := validBucket(c.Bucket); err != nil {
		errs = append(errs, err)
	}
	if c.Prefix != "" {
		if err := validKey(c.Prefix); err != nil {
			errs = append(errs, fmt.Errorf("prefix: %w", err))
		}
	}
	if c.Credentials.AccessKeyID == "" {
		errs = append(errs, errors.New("credentials: the access key id is empty"))
	}
	if c.Credentials.SecretAccessKey == "" {
		errs = append(errs, errors.New("credentials: the secret access key is empty"))
	}
	if len(c.CABundle) > 0 {
		if _, err := certPool(c.CABundle); err != nil {
			errs = append(errs, err)
		}
	}
	if e := c.Encryption; e != nil {
		switch e.Mode {
		case SSES3:
			if e.KMSKeyID != "" {
				errs = append(errs, errors.New("encryption: a KMS key id is only for SSE-KMS"))
			}
		case SSEKMS:
			if e.KMSKeyID == "" {
				errs = append(errs, errors.New("encryption: SSE-KMS needs a KMS key id"))
			}
		default:
			errs = append(errs, fmt.Errorf("encryption: mode %q is neither %s nor %s", e.Mode, SSES3, SSEKMS))
		}
	}
	return errors.Join(errs...)
}

// validBucket applies S3's bucket naming rules (3 to 63 characters of lowercase letters, digits, dots and
// hyphens, beginning and ending with a letter or digit, no "..").
func validBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket %q must be 3 to 63 characters long", b)
	}
	for i, r := range b {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '.' || r == '-') && i > 0 && i < len(b)-1
		if !ok {
			return fmt.Errorf("bucket %q: only lowercase letters, digits, and inner dots and hyphens", b)
		}
	}
	if strings.Contains(b, "..") {
		return fmt.Errorf("bucket %q must not contain \"..\"", b)
	}
	return nil
}

// certPool parses a PEM bundle; it fails when the bundle holds no certificate or anything that does not
// parse.
func certPool(bundle []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if strings.TrimSpace(string(rest)) != "" {
				return nil, errors.New("CA bundle: text after the last PEM block is not PEM")
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("CA bundle: a %q block where only certificates belong", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: certificate %d: %w", n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, errors.New("CA bundle holds no PEM certificate")
	}
	return pool, nil
}
