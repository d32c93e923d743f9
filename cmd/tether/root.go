package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
)

// Exit codes. job submit --wait adds two, so that a script can tell a job
// that ran and failed from a wait that gave up (docs/configuration.md):
const (
	exitOK    = 0 // done (with --wait: the job succeeded or was a no-op)
	exitError = 1 // an error: tether could not do what was asked
	exitUsage = 2 // the command line was wrong
	// exitJobUnsuccessful: job submit --wait saw the job end failed,
	// conflict, canceled or expired.
	exitJobUnsuccessful = 3
	// exitWaitTimeout: job submit --wait --timeout gave up; the job carries
	// on.
	exitWaitTimeout = 4
)

// usageError is a mistake in how a command was called: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitCodeError ends the command with a specific exit code after printing
// its message (if any).
type exitCodeError struct {
	code int
	msg  string
}

func (e *exitCodeError) Error() string { return e.msg }

// globals are the flags every command shares.
type globals struct {
	command string // the command being run ("tether cluster list"), for openApp
	db      string
	keyFile string
	// server and tokenFile name a tether's admin API for the commands that
	// also work remotely (api.go).
	server    string
	tokenFile string
	// viaContext names the context tether login saved when a command runs
	// over it because neither --server nor --db said otherwise: an error
	// reaching or entering that server then says where the command went.
	viaContext string
	// completionDBGiven: while completing, --db or $TETHER_DB named a
	// database (completionGlobals).
	completionDBGiven bool
	output            string
	// wide is -o wide: tables show their extra columns.
	wide bool
	// jq is --jq: a jq expression over the JSON output.
	jq string
	// finishOutput, when set, flushes an output converter (format.go).
	finishOutput func() error
	// mutated is set by a command once it has changed something (mutated):
	// from then on, an answer that -o or --jq cannot convert is printed
	// whole rather than lost, since running the command again would not
	// give it back (a registration token, an admin token's secret). It is
	// written before the answer is, and the converter reads it after the
	// answer came through its pipe, which orders the two.
	mutated bool
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

// defaultDB is the database when neither --db nor $TETHER_DB names one.
const defaultDB = "tether.db"

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if g.finishOutput != nil {
		if ferr := g.finishOutput(); ferr != nil && err == nil {
			err = &exitCodeError{code: exitError, msg: sentence(ferr.Error())}
		}
	}
	if err == nil {
		return exitOK
	}
	var ue *usageError
	var ce *exitCodeError
	switch {
	case errors.As(err, &ce):
		if ce.msg != "" {
			fmt.Fprintln(stderr, "tether: "+safeLines(ce.msg))
		}
		return ce.code
	case errors.As(err, &ue), isCobraUsageError(err):
		fmt.Fprintln(stderr, "tether: "+safeLines(sentence(withSuggestion(cmd, withFlagSources(cmd, err.Error())))))
		fmt.Fprintln(stderr, "Run 'tether --help' (or add --help to the command) for usage.")
		return exitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "tether: interrupted")
		return exitError
	case errors.Is(err, registry.ErrKeyFileUnusable):
		// The setup is wrong, as with a bad flag: the user's to fix.
		msg := err.Error()
		if e := (*registry.Error)(nil); errors.As(err, &e) {
			msg = e.Message
		}
		fmt.Fprintln(stderr, "tether: "+safeLines(sentence(msg)))
		return exitUsage
	}
	msg := registry.ErrorMessage(err)
	switch registry.ErrorCode(err) {
	case registry.CodeUnavailable, registry.CodeUnauthorized, registry.CodeForbidden:
		if g.viaContext != "" {
			// A newcomer who once ran tether login, back in a directory
			// with a tether.db, would not guess that the command went to
			// that server rather than to the database beside them.
			msg = fmt.Sprintf("%s (this ran over the context %q that tether login saved, as every admin command does unless --db or $TETHER_DB names a database)",
				strings.TrimSuffix(strings.TrimSpace(msg), "."), g.viaContext)
		}
	}
	fmt.Fprintln(stderr, "tether: "+safeLines(sentence(msg)))
	return exitError
}

// isCobraUsageError recognizes cobra's own errors for unknown commands and
// flags and wrong argument counts, which it returns as plain errors. Each
// starts its message with these words: a message that merely holds them
// (a cluster named "accepts all" that does not exist, a PostgreSQL server's
// words) is not a usage error.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag", "bad flag syntax"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// sentence makes an error message one sentence: capital-free start kept as is,
// a final period added.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "failed"
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, ")") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

func newRoot(g *globals) *cobra.Command {
	// The root's PersistentPreRunE (environment and config file) runs for
	// every command, even one that defines its own persistent hook.
	cobra.EnableTraverseRunHooks = true
	root := &cobra.Command{
		Use:   "tether",
		Short: "Control plane for pull-mode agents",
		Long: `tether is a control plane for pull-mode agents and its terminal console.

Agents register with a one-time token, long-poll for jobs, claim them and
report results. Admins manage clusters, tokens, credentials and jobs from this
CLI or from the console (tether console).

Every flag can also be set in the environment as TETHER_<FLAG>: --db is
TETHER_DB, --key-file TETHER_KEY_FILE. A flag on the command line wins.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// tether completion bash|zsh|fish|powershell (completion.go).
		CompletionOptions: cobra.CompletionOptions{},
		Version:           versionString(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			g.command = cmd.CommandPath()
			// Flags the command line left alone come from TETHER_<FLAG>,
			// then from --config (config.go).
			if err := applyEnvironment(cmd, os.LookupEnv); err != nil {
				return err
			}
			if err := applyConfigFile(cmd); err != nil {
				return err
			}
			if why := refusesServer(g.command); g.server != "" && why != "" {
				return usagef("%s does not run over --server: %s", g.command, why)
			}
			return setupOutput(g)
		},
	}
	// --version prints what `tether version` prints.
	cobra.AddTemplateFunc("tetherVersion", func() string {
		var b strings.Builder
		printVersion(&b)
		return b.String()
	})
	root.SetVersionTemplate("{{tetherVersion}}")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.db, "db", defaultDB, "SQLite database file, or a postgres:// URL (env TETHER_DB)")
	pf.StringVar(&g.server, "server", "", "run over this tether's admin API (http(s)://HOST:PORT) instead of --db: every admin command but serve, backup, restore, keys and demo (env TETHER_SERVER)")
	pf.StringVar(&g.tokenFile, "token-file", "", "with --server: file holding the admin token (- for standard input; else $TETHER_ADMIN_TOKEN or the context tether login saved)")
	pf.StringVar(&g.keyFile, "key-file", "", "file of the key that seals HMAC keys; with PostgreSQL every replica must use the same one (env TETHER_KEY_FILE; default for SQLite: the database's path + .key)")
	pf.StringVarP(&g.output, "output", "o", "table", outputHelp)
	pf.StringVar(&g.jq, "jq", "", "filter the JSON output with a jq expression, e.g. '.[].name' (strings print without quotes)")
	for _, add := range commandGroups {
		root.AddCommand(add(g))
	}
	// cobra adds the completion command only as it runs; added now, it
	// gets the groups' handling of a mistyped shell (a usage error, not
	// its help and exit code 0).
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil && comp != root {
		comp.Args = cobra.ArbitraryArgs
		comp.RunE = groupCommand(comp.Use, comp.Short).RunE
	}
	addCompletions(root, g)
	addExamples(root)
	return root
}

// commandGroups are registered by each command file's init, so that adding a
// command group touches only its own file.
var commandGroups []func(*globals) *cobra.Command

func register(f func(*globals) *cobra.Command) { commandGroups = append(commandGroups, f) }

// adminActor is who the audit trail names for CLI and console actions: the
// operating-system user.
func adminActor() registry.Actor {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return registry.Actor{Kind: registry.ActorAdmin, Name: name}
}

// safeLines makes an error message safe for the terminal line by line
// (display.Safe would flatten a message of several lines): messages repeat
// input, such as a payload's member names or a server's answer, and that
// text must not reach the terminal as escape sequences.
func safeLines(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		lines[i] = display.Safe(l)
	}
	return strings.Join(lines, "\n")
}
