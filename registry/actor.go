package registry

import "context"

// Actor is who performed an action, as the audit trail records it, and for
// admin actors what they may do (their role) and see (their organization).
type Actor struct {
	Kind string // ActorAdmin, ActorAdminToken, ActorSSH, ActorAgent or ActorSystem
	Name string // an admin's name, a token's name, "<cluster>/<credential>" for agents, a service name for the system
	// Role bounds what an admin actor may do. Empty means RoleAdmin: a person
	// at the CLI or the console with the database itself in hand can already
	// do anything, so nothing is gained by asking them for a role.
	Role Role
	// Org, when set, confines an admin actor to the clusters whose owning
	// organization it is: every other cluster, and everything it owns, is
	// answered as if it did not exist (seed 003: cross-org reads are not
	// possible by construction).
	Org string
}

const (
	ActorAdmin      = "admin"       // a person at the CLI or console (the operating-system user)
	ActorAdminToken = "admin-token" // a caller of the admin API, by its token's name
	ActorSSH        = "ssh"         // a person at the console over SSH, by the name of the admin identity holding their key
	ActorAgent      = "agent"
	ActorSystem     = "system"
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
