package backup

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// StoreFile is the store configuration file the program reads (--store-config), JSON or YAML: the store's
// description, with the credentials and CA bundle named by file or environment variable rather than
// written in it, so that a Job mounts them from a Secret and the file itself holds nothing secret.
type StoreFile struct {
	// Endpoint, Bucket, Prefix and Region are objectstore.Config's.
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Prefix   string `json:"prefix,omitempty"`
	Region   string `json:"region,omitempty"`
	// Credentials name where the access key pair is read from.
	Credentials CredentialSources `json:"credentials"`
	// CABundleFile is a PEM file of the CAs the store's certificate must chain to; empty uses the system's.
	CABundleFile string `json:"caBundleFile,omitempty"`
	// Encryption is objectstore.Config's.
	Encryption *objectstore.Encryption `json:"encryption,omitempty"`
}

// CredentialSources name, for each half of the access key pair, a file (a mounted Secret's key) or an
// environment variable (a Secret's key as env): exactly one of the two.
type CredentialSources struct {
	AccessKeyIDFile     string `json:"accessKeyIDFile,omitempty"`
	AccessKeyIDEnv      string `json:"accessKeyIDEnv,omitempty"`
	SecretAccessKeyFile string `json:"secretAccessKeyFile,omitempty"`
	SecretAccessKeyEnv  string `json:"secretAccessKeyEnv,omitempty"`
}

// LoadStoreFile reads the file at path (unknown fields are an error) and resolves it to a validated
// objectstore.Config.
func LoadStoreFile(path string) (objectstore.Config, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return objectstore.Config{}, fmt.Errorf("store config: %w", err)
	}
	var f StoreFile
	if err := yaml.UnmarshalStrict(doc, &f); err != nil {
		// The decoder's error may quote the document; the document names no secret, but keep to the cause.
		return objectstore.Config{}, fmt.Errorf("store config %s: %w", path, err)
	}
	return f.Resolve()
}

// Resolve reads the credentials and the CA bundle and returns the validated configuration.
func (f StoreFile) Resolve() (objectstore.Config, error) {
	cfg := objectstore.Config{Endpoint: f.Endpoint, Bucket: f.Bucket, Prefix: f.Prefix, Region: f.Region,
		Encryption: f.Encryption}
	var errs []error
	var err error
	if cfg.Credentials.AccessKeyID, err = source("access key id", f.Credentials.AccessKeyIDFile, f.Credentials.AccessKeyIDEnv); err != nil {
		errs = append(errs, err)
	}
	if cfg.Credentials.SecretAccessKey, err = source("secret access key", f.Credentials.SecretAccessKeyFile, f.Credentials.SecretAccessKeyEnv); err != nil {
		errs = append(errs, err)
	}
	if f.CABundleFile != "" {
		if cfg.CABundle, err = os.ReadFile(f.CABundleFile); err != nil {
			errs = append(errs, fmt.Errorf("CA bundle: %w", err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, cfg.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return objectstore.Config{}, fmt.Errorf("store config: %w", err)
	}
	return cfg, nil
}

// source reads one credential from a file or the environment. Its errors name the file or variable, never
// the value; a trailing newline (as `kubectl create secret --from-file` keeps) is dropped.
func source(what, file, env string) (string, error) {
	switch {
	case file != "" && env != "":
		return "", fmt.Errorf("credentials: the %s has both a file and an environment variable: name one", what)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("credentials: the %s: %w", what, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("credentials: the %s file %s is empty", what, file)
		}
		return v, nil
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return "", fmt.Errorf("credentials: the %s variable %s is unset or empty", what, env)
		}
		return v, nil
	}
	return "", fmt.Errorf("credentials: the %s names neither a file nor an environment variable", what)
}
