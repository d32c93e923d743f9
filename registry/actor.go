package registry

import "context"

// Actor is who performed an action, as the audit trail records it.
type Actor struct {
	Kind string // ActorAdmin, ActorAgent or ActorSystem
	Name string // an admin's name, "<cluster>/<credential>" for agents, a service name for the system
}

const (
	ActorAdmin  = "admin"
	ActorAgent  = "agent"
	ActorSystem = "system"
)

func (a Actor) String() string {
	if a.Kind == "" {
		return "unknown"
	}
	return a.Kind + ":" + a.Name
}

type actorKey struct{}

// WithActor returns a context that attributes actions to a.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor of ctx; actions without one are attributed to
// "system:unknown" so that they still appear in the audit trail.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	return Actor{Kind: ActorSystem, Name: "unknown"}
}
