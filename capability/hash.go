// Package capability holds what approvals, confirm and steploop share about a
// capability: its descriptor, its risk class, and the effective-input hash that
// approvals and confirmations bind to.
package capability

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Canonical returns the RFC 8785 (JCS) canonical form of a JSON document.
// Approvals and confirmations bind to this form, never to raw request bytes,
// so that key order and insignificant whitespace do not change the binding.
func Canonical(doc []byte) ([]byte, error) {
	out, err := jcs.Transform(doc)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return out, nil
}

// Hash returns the hex SHA-256 of the canonical JSON form of doc.
func Hash(doc []byte) (string, error) {
	c, err := Canonical(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// HashValue marshals v to JSON and returns Hash of it.
func HashValue(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("marshal for hash: %w", err)
	}
	return Hash(b)
}
