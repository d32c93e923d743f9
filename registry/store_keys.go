package registry

import (
	"context"
	"time"
)

// KeyStore is the part of Store that keeps per-cluster signing keys and agent public keys (issue 10).
// Every method that writes is atomic, as Store's are.
type KeyStore interface {
	// SealedSecretsExist reports whether anything sealed with the key file
	// is stored: a live credential's HMAC key or a webhook's secret.
	SealedSecretsExist(ctx context.Context) (bool, error)
	// SignatureRecord remembers a signature until expiresAt and reports
	// whether it was new: false when it was already remembered and has not
	// expired at now (a replay), whichever replica saw it first. Concurrent
	// records of one signature: exactly one is new.
	SignatureRecord(ctx context.Context, key []byte, expiresAt, now time.Time) (fresh bool, err error)
	// SignaturesPrune forgets signatures that expired before before.
	SignaturesPrune(ctx context.Context, before time.Time) (int, error)
}
