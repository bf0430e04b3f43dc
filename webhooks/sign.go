package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// signature is the webhook-signature header of Standard Webhooks: for each
// secret, "v1," and the base64 HMAC-SHA256 of "{id}.{timestamp}.{body}"
// under the secret's key, space-separated, so a receiver holding either
// key of a rotation verifies.
func signature(id string, at time.Time, body []byte, secrets []string) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			return "", fmt.Errorf("webhook secret is not whsec_ and base64: %w", err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + strconv.FormatInt(at.Unix(), 10) + "."))
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}
