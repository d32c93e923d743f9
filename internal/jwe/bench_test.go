package jwe

import (
	"bytes"
	"testing"
)

// BenchmarkEncrypt is the cost tether adds to each job it hands out
// encrypted: one ephemeral key agreement, a key wrap and AES-GCM over a
// 4 KiB payload.
func BenchmarkEncrypt(b *testing.B) {
	payload := bytes.Repeat([]byte("x"), 4096)
	for name, priv := range map[string]func() (*PrivateKey, error){"X25519": GenerateX25519, "P-256": GenerateP256} {
		k, err := priv()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := k.Public().Encrypt(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
