package postgres

import (
	"crypto/rand"
	"math/big"
)

// PasswordLength is the length of a generated password: 32 characters of 62 is about 190 bits.
const PasswordLength = 32

const passwordAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewPassword is a random password of letters and digits: nothing a URL, a shell or a connection
// string must escape, and nothing SASLprep changes (so the SCRAM verifier computed here is the one the
// server expects).
func NewPassword() (string, error) {
	b := make([]byte, PasswordLength)
	n62 := big.NewInt(int64(len(passwordAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, n62)
		if err != nil {
			return "", err
		}
		b[i] = passwordAlphabet[n.Int64()]
	}
	return string(b), nil
}
