package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func init() { register(newVersionCmd) }

func versionString() string {
	v := version
	if v == "dev" {
		if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
	}
	return v
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tether's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.output == "json" {
				return printJSON(g.stdout, map[string]string{"version": versionString(), "go": runtime.Version()})
			}
			_, err := fmt.Fprintf(g.stdout, "tether %s (%s)\n", versionString(), runtime.Version())
			return err
		},
	}
}
