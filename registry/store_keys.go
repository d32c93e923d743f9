package registry

// KeyStore is the part of Store that keeps per-cluster signing keys and agent public keys (issue 10).
// Every method that writes is atomic, as Store's are.
type KeyStore interface {
}
