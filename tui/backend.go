package tui

import (
	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// Backend is everything the console reads and does: admin.Service, served
// by a registry in this process (admin.Local) or a tether's admin API
// (admin.Remote). The console calls it only from tea.Cmds, never from
// Update or View. Errors carry registry codes (registry.ErrorCode) and
// caller-facing messages (registry.ErrorMessage), which the console shows
// as they are.
type Backend = admin.Service

// Local is the Backend over a registry in this process.
type Local = admin.Local

// NewLocal returns a Backend over reg whose actions are attributed to actor.
func NewLocal(reg *registry.Registry, actor registry.Actor) *Local { return admin.NewLocal(reg, actor) }

// errReadOnly is what a read-only console answers every change with: it is
// enforced in the Backend (admin.ReadOnly) as well as hidden in the UI.
var errReadOnly = registry.Errorf(registry.CodeForbidden, "the console is read-only (started with --read-only): changes are disabled")

// consoleRollouts is the rollouts the console lists: the newest 500 (over
// the admin API, every page).
var consoleRollouts = registry.RolloutListParams{Limit: 500}
