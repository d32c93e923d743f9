// Command tether is the control plane for pull-mode agents: the admin CLI,
// the agent API server (serve), the reference agent (agent), a simulated fleet
// (demo) and the console.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
