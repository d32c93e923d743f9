package tui

import "github.com/tetherhq/tether/registry"

// canAdmin reports whether the console's person may do what only an admin
// may (create the CA): never in a read-only console, and over the admin API
// only with an admin token (an operator's would be refused with 403).
func canAdmin(ctx *Context) bool { return ctx.allows(registry.PermAdmin, true) }
