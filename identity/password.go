package identity

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/invoiced/invoiced/problem"
	"golang.org/x/crypto/argon2"
)

// argon2id parameters: OWASP's second recommended profile (19 MiB, two
// passes, one lane), about 30 ms on this project's 2-core machines. They
// are stored in each hash, so raising them later keeps old hashes valid.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// PasswordMinLength is the shortest password PasswordSet accepts; 12
// characters follows NIST SP 800-63B's advice to favour length.
const PasswordMinLength = 12

// passwordMaxBytes bounds the work an attacker can make argon2 do per guess.
const passwordMaxBytes = 1024

// PasswordHash returns the argon2id hash of password in the PHC string
// format ($argon2id$v=19$m=…,t=…,p=…$salt$hash).
func PasswordHash(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

var errBadHash = errors.New("not an argon2id hash")

// PasswordVerify reports whether password matches encoded, a hash made by
// PasswordHash; the comparison is constant-time.
func PasswordVerify(encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var mem, iter uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iter, &threads); err != nil || mem == 0 || iter == 0 || threads == 0 {
		return false, errBadHash
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, iter, mem, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// dummyHash is verified against when the username is unknown or has no
// password, so a miss costs as much as a wrong password and response time
// does not reveal which usernames exist. It is made on first use, not at
// start: one hash takes 19 MiB and about 50 ms, which every process (the
// CLI too) would otherwise pay whether or not anyone signs in.
var dummyHash = sync.OnceValue(func() string {
	h, err := PasswordHash("not a password anyone has")
	if err != nil {
		panic(err)
	}
	return h
})

// PasswordValidate checks a new password against the policy.
func PasswordValidate(password string) error {
	if utf8.RuneCountInString(password) < PasswordMinLength {
		return problem.Invalid("password", "must be at least %d characters", PasswordMinLength)
	}
	if len(password) > passwordMaxBytes {
		return problem.Invalid("password", "must be at most %d bytes", passwordMaxBytes)
	}
	if !utf8.ValidString(password) {
		return problem.Invalid("password", "must be valid UTF-8")
	}
	return nil
}
