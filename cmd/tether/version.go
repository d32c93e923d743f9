package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/internal/buildinfo"
)

func init() { register(newVersionCmd) }

// versionString is tether's version alone ("v1.2.3", or "dev" for an
// unstamped build), as the reference agent reports it.
func versionString() string { return buildinfo.Short() }

// printVersion writes the human form shared by `tether version` and
// `tether --version`.
func printVersion(w io.Writer) error {
	i := buildinfo.Get()
	_, err := fmt.Fprintf(w, "tether %s\n  commit: %s\n  built:  %s\n  go:     %s %s\n", i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
	return err
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tether's version, commit and build date",
		Long: `Print the version, the commit and the build date stamped into this binary
at build time, and the Go toolchain and platform it was built with.
tether --version prints the same.`,
		Example: `  tether version
  tether version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.output == "json" {
				return printJSON(g.stdout, buildinfo.Get())
			}
			return printVersion(g.stdout)
		},
	}
}
