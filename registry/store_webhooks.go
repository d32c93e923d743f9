package registry

// WebhookStore is the part of Store that keeps webhook subscriptions and their delivery outbox (issue 9).
// Every method that writes is atomic, as Store's are.
type WebhookStore interface {
}
