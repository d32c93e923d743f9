package registry

// RolloutStore is the part of Store that keeps labels' rollouts and their targets (issue 14).
// Every method that writes is atomic, as Store's are.
type RolloutStore interface {
}
