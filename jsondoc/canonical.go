package jsondoc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Canonical returns the RFC 8785 (JCS) canonical form of a JSON document.
// Approvals, confirmations and the audit chain bind to this form, never
// to raw request bytes, so that key order and insignificant whitespace do
// not change the binding. It refuses what is not I-JSON: duplicate
// members, lone surrogates, numbers past float64.
func Canonical(doc []byte) ([]byte, error) {
	out, err := jcs.Transform(doc)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return out, nil
}

// Sum returns the hex SHA-256 of canon, a document already in canonical
// form (as Canonical returns it).
func Sum(canon []byte) string {
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// Hash returns the hex SHA-256 of the canonical form of doc.
func Hash(doc []byte) (string, error) {
	c, err := Canonical(doc)
	if err != nil {
		return "", err
	}
	return Sum(c), nil
}
