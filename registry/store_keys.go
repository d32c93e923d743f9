package registry

import "context"

// KeyStore is the part of Store that keeps per-cluster signing keys and agent public keys (issue 10).
// Every method that writes is atomic, as Store's are.
type KeyStore interface {
	// SealedSecretsExist reports whether anything sealed with the key file
	// is stored: a live credential's HMAC key or a webhook's secret.
	SealedSecretsExist(ctx context.Context) (bool, error)
}
