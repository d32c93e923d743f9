package registry

// RetentionStore is the part of Store that keeps retention of finished jobs and audit entries, backup (issue 11).
// Every method that writes is atomic, as Store's are.
type RetentionStore interface {
}
