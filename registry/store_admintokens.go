package registry

// AdminTokenStore is the part of Store that keeps admin tokens (issue 9).
// Every method that writes is atomic, as Store's are.
type AdminTokenStore interface {
}
