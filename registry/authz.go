package registry

import (
	"context"
	"slices"
)

// Role is what an admin actor may do. Each role includes the ones before it.
type Role string

const (
	// RoleViewer reads everything in its scope.
	RoleViewer Role = "viewer"
	// RoleOperator also runs the queues: submit, requeue, cancel, extend,
	// retry and delete jobs, pause and resume a cluster's queue.
	RoleOperator Role = "operator"
	// RoleAdmin also manages clusters, registration tokens, credentials,
	// webhooks and admin tokens.
	RoleAdmin Role = "admin"
)

// Roles lists every role, least powerful first.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// Permission is what an operation needs.
type Permission int

const (
	PermRead    Permission = iota // viewer
	PermOperate                   // operator
	PermAdmin                     // admin
)

// Role is the least role that has the permission.
func (p Permission) Role() Role { return Roles[p] }

// RoleAllows reports whether a token of the role has perm: what the console
// asks before it offers an action, so that it shows exactly what the
// server would do (an unknown role has nothing).
func RoleAllows(role Role, perm Permission) bool {
	return slices.Index(Roles, role) >= int(perm)
}

// effectiveRole is the role an actor acts with: an admin actor's own role
// (RoleAdmin when unset); agents and the system are not subject to admin
// roles (their operations check what they may do themselves).
func (a Actor) effectiveRole() Role {
	if a.Role == "" {
		return RoleAdmin
	}
	return a.Role
}

// isAdminKind reports whether the actor is subject to roles and scopes.
func (a Actor) isAdminKind() bool {
	return a.Kind == ActorAdmin || a.Kind == ActorAdminToken || a.Kind == ActorSSH
}

// Can reports whether the actor has perm.
func (a Actor) Can(perm Permission) bool {
	if !a.isAdminKind() {
		return true
	}
	return RoleAllows(a.effectiveRole(), perm)
}

// authorize refuses an operation the actor of ctx may not do, with
// CodeForbidden naming the role it needs.
func authorize(ctx context.Context, perm Permission) error {
	a := ActorFrom(ctx)
	if a.Can(perm) {
		return nil
	}
	return Errorf(CodeForbidden, "%s has the %s role; this needs the %s role", a, a.effectiveRole(), perm.Role())
}

// authorizeFleet is authorize(PermAdmin) for what serves every organization
// (tether's CA, the key file's seals): an admin confined to one organization
// may not change it or count what other organizations keep under it.
func authorizeFleet(ctx context.Context, what string) error {
	if err := authorize(ctx, PermAdmin); err != nil {
		return err
	}
	if org := orgScope(ctx); org != "" {
		return Errorf(CodeForbidden, "%s is confined to organization %q, and %s serves every organization: an admin token without an organization manages it", ActorFrom(ctx), org, what)
	}
	return nil
}

// orgScope returns the organization the actor of ctx is confined to, or ""
// when it sees every cluster.
func orgScope(ctx context.Context) string {
	if a := ActorFrom(ctx); a.isAdminKind() {
		return a.Org
	}
	return ""
}

// inScope reports whether the actor of ctx may see the cluster. Callers
// answer an out-of-scope cluster exactly as a missing one.
func inScope(ctx context.Context, c *Cluster) bool {
	org := orgScope(ctx)
	return org == "" || c.Organization == org
}

// scopedClusterIDs narrows a filter of cluster ids to the clusters the actor
// of ctx may see. It returns the ids to filter on (nil: no filter) and
// whether anything at all is visible; when none is, the caller returns an
// empty list without asking the store.
func (r *Registry) scopedClusterIDs(ctx context.Context, ids []string) (filter []string, any bool, err error) {
	org := orgScope(ctx)
	if org == "" {
		return ids, true, nil
	}
	clusters, err := r.store.ClusterList(ctx, ClusterListParams{Organization: org})
	if err != nil {
		return nil, false, err
	}
	visible := make([]string, 0, len(clusters))
	for _, c := range clusters {
		if len(ids) == 0 || slices.Contains(ids, c.ID) {
			visible = append(visible, c.ID)
		}
	}
	return visible, len(visible) > 0, nil
}
