package auth

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// labelTag is the prefix of the JWT tags that carry a device's credential labels: each is
// fleet-label:<hex key>:<hex value>. JWT tags are lower-cased by the jwt library and by nats tools,
// and Kubernetes label keys and values are case-sensitive: lower-case hexadecimal survives both.
const labelTag = "fleet-label:"

// ValidLabels says why labels cannot be a device's credential labels, or nil: Kubernetes label keys
// and values, at most fleet.MaxLabels.
func ValidLabels(labels map[string]string) error {
	if len(labels) > fleet.MaxLabels {
		return fmt.Errorf("%d labels, at most %d", len(labels), fleet.MaxLabels)
	}
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("label %s value %q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

func labelTags(labels map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, labelTag+hex.EncodeToString([]byte(k))+":"+hex.EncodeToString([]byte(labels[k])))
	}
	return out
}

// labelsOf reads the credential labels of a user's tags (nil: none); a tag that does not decode is
// an error (fleet-auth never writes one).
func labelsOf(tags jwt.TagList) (map[string]string, error) {
	var out map[string]string
	for _, t := range tags {
		rest, ok := strings.CutPrefix(strings.ToLower(t), labelTag)
		if !ok {
			continue
		}
		hk, hv, ok := strings.Cut(rest, ":")
		k, errK := hex.DecodeString(hk)
		v, errV := hex.DecodeString(hv)
		if !ok || errK != nil || errV != nil {
			return nil, fmt.Errorf("label tag %q does not decode", t)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[string(k)] = string(v)
	}
	return out, ValidLabels(out)
}

// CredentialJWT is the user JWT of a .creds file: what an agent puts in its device record
// (DeviceInfo.Credential) so that the operator can read its credential labels. It is public (the
// seed beside it in the file is the secret).
func CredentialJWT(credsFile string) (string, error) {
	b, err := os.ReadFile(credsFile)
	if err != nil {
		return "", fmt.Errorf("read NATS credentials: %w", err)
	}
	token, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return "", fmt.Errorf("read NATS credentials %s: %w", credsFile, err)
	}
	return token, nil
}

// Verifier reads the credential labels of device records: it trusts a user JWT only when the fleet
// account's device signing key signed it (per the account JWT), for the device the record names, not
// expired and not revoked.
type Verifier struct {
	account     string
	deviceKeys  map[string]bool
	revocations jwt.RevocationList
}

// NewVerifier is the Verifier of the account JWT accountJWT (account.jwt, written by fleet-auth init,
// and rewritten by revoke and update-permissions: give the operator the current one).
func NewVerifier(accountJWT string) (*Verifier, error) {
	ac, err := jwt.DecodeAccountClaims(strings.TrimSpace(accountJWT))
	if err != nil {
		return nil, fmt.Errorf("read the account JWT: %w", err)
	}
	v := &Verifier{account: ac.Subject, deviceKeys: map[string]bool{}, revocations: ac.Revocations}
	for key, scope := range ac.SigningKeys {
		if us, ok := scope.(*jwt.UserScope); ok && us.Role == string(RoleDevice) {
			v.deviceKeys[key] = true
		}
	}
	if len(v.deviceKeys) == 0 {
		return nil, errors.New("the account JWT has no signing key of role device")
	}
	return v, nil
}

// LoadVerifier is NewVerifier of the account JWT file path.
func LoadVerifier(path string) (*Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return NewVerifier(string(b))
}

// Labels are the credential labels of token for device at now, or why token is not a credential of
// device: a signature that does not verify, an issuer that is not the account's device signing key,
// another account, another name, expired, not yet valid, or revoked.
func (v *Verifier) Labels(device, token string, now time.Time) (map[string]string, error) {
	if token == "" {
		return nil, errors.New("the record carries no credential")
	}
	uc, err := jwt.DecodeUserClaims(token) // verifies the signature against the issuer it names
	if err != nil {
		return nil, fmt.Errorf("credential: %w", err)
	}
	switch {
	case !v.deviceKeys[uc.Issuer]:
		return nil, errors.New("credential not signed by the fleet account's device signing key")
	case uc.IssuerAccount != v.account:
		return nil, errors.New("credential of another account")
	case uc.Name != device:
		return nil, fmt.Errorf("credential of %q, not of device %q", truncate(uc.Name, 128), device)
	case uc.Expires != 0 && now.Unix() > uc.Expires:
		return nil, errors.New("credential expired")
	case uc.NotBefore != 0 && now.Unix() < uc.NotBefore:
		return nil, errors.New("credential not yet valid")
	case v.revocations.IsRevoked(uc.Subject, time.Unix(uc.IssuedAt, 0)):
		return nil, errors.New("credential revoked")
	}
	return labelsOf(uc.Tags)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Trust is the operator's fleet.LabelTrust: a device record's verified credential labels become its
// CredentialLabels (and its Previous labels' Credential), and are laid over its own labels (they win a
// conflict). A selector whose namespace's policy names a label key matches that key against credential
// labels only (fleet.DeviceLabels.View), so a device's own labels add information for selectors but
// never satisfy the policy. A record whose credential does not verify has no credential labels;
// refused is called with the reason (it may be nil). A nil Verifier verifies nothing.
func (v *Verifier) Trust(now func() time.Time, refused func(device string, err error)) fleet.LabelTrust {
	return func(d *fleet.DeviceInfo) {
		var cred map[string]string
		if v != nil && d.Credential != "" {
			var err error
			if cred, err = v.Labels(d.ID, d.Credential, now()); err != nil {
				cred = nil
				if refused != nil {
					refused(d.ID, err)
				}
			}
		}
		merge := func(l *fleet.DeviceLabels) {
			if l == nil || l.Removed {
				return
			}
			out := make(map[string]string, len(l.Labels)+len(cred))
			maps.Copy(out, l.Labels)
			maps.Copy(out, cred)
			if len(out) == 0 {
				out = nil
			}
			l.Labels, l.Credential = out, cred
		}
		cur := &fleet.DeviceLabels{Labels: d.Labels, Removed: d.Removed}
		merge(cur)
		d.Labels, d.CredentialLabels = cur.Labels, cur.Credential
		merge(d.Previous)
	}
}
