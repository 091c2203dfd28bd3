package postgres

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// The verifier is computed here, on the standard library's PBKDF2 and HMAC, because neither pgx (the driver
// the operator uses) nor lib/pq exports a function that builds a PostgreSQL verifier: their SCRAM code is the
// client side of the login exchange. The tests log in to a real PostgreSQL with a role whose password was set
// from a verifier made here (TestServerAcceptsVerifier) and check RFC 7677's test vector (TestScramVerifier).

// ScramIterations is the iteration count of the verifiers made here, PostgreSQL's default
// (scram_iterations).
const ScramIterations = 4096

// scramSaltLength is the salt length PostgreSQL uses.
const scramSaltLength = 16

// NewScramVerifier is a SCRAM-SHA-256 verifier for password with a random salt, in the form PostgreSQL
// stores and accepts in place of a password: SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>.
// The server cannot recover the password from it, so the statement that sends it may be logged.
func NewScramVerifier(password string) (string, error) {
	salt := make([]byte, scramSaltLength)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	return ScramVerifier(password, salt, ScramIterations)
}

// ScramVerifier is the SCRAM-SHA-256 verifier of password for salt and iterations (RFC 5802, RFC 7677).
// The password is used as is: PostgreSQL applies SASLprep, which leaves the ASCII letters and digits of
// generated passwords unchanged.
func ScramVerifier(password string, salt []byte, iterations int) (string, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", err
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	enc := base64.StdEncoding
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, enc.EncodeToString(salt),
		enc.EncodeToString(storedKey[:]), enc.EncodeToString(serverKey)), nil
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
