package data

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Fingerprint is the hex SHA-256 of "train <fingerprint>\ntest <fingerprint>\n" of
// the parts' content fingerprints (Dataset.Fingerprint; an absent test part is
// "-"): equal fingerprints mean the same images and labels in the same order.
func (s *Split) Fingerprint() string {
	fp := func(d *Dataset) string {
		if d == nil {
			return "-"
		}
		if d.SHA256 != "" {
			return d.SHA256
		}
		return d.Fingerprint()
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("train %s\ntest %s\n", fp(s.Train), fp(s.Test))))
	return hex.EncodeToString(sum[:])
}
