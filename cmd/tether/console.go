package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
	"github.com/tetherhq/tether/themes"
	"github.com/tetherhq/tether/tui"
)

func init() { register(newConsoleCmd) }

// consoleOptions are the console's flags.
type consoleOptions struct {
	serve    bool
	listen   string
	readOnly bool
	theme    string
	start    string
}

// notATerminal is what the console says when it cannot run: where to find the
// same information without it.
const notATerminal = `the console needs an interactive terminal (%s).
The same information and actions are available from the CLI:
  tether cluster list                     the fleet: state, heartbeat, open jobs
  tether cluster get NAME                 one cluster: allowlists, credentials, tokens, jobs
  tether job list --state queued          the queues (--cluster, --kind, --search filter)
  tether job get ID                       one job: claim, lease, timeline, result
  tether events --follow                  the live tail of agent events
  tether audit                            the audit trail
  tether serve                            the agent API on its own`

func newConsoleCmd(g *globals) *cobra.Command {
	var opts consoleOptions
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Open the console: the fleet, the queues, live events and the audit trail in the terminal",
		Long: `Open the console over the --db database: an overview, the clusters (create,
issue tokens, edit allowlists, rotate or revoke credentials, disable, delete),
the job queues (requeue, cancel, extend leases), the live event tail and the
audit trail. ? shows the keys of each screen; : opens the command line.

--serve also runs the agent API in the same process (as tether serve does,
with its reaper and pruner), so that agents can register with the tokens the
console issues; its address is shown in the header and its log goes to
DB.serve.log (tether-serve.log for a PostgreSQL database). --read-only
hides and refuses every change.

Remotely: --server URL runs every view and action over that tether's admin
API with an admin token (--token-file, else $TETHER_ADMIN_TOKEN), and so
does a context saved by 'tether login' unless --db or $TETHER_DB names a
database. The token's role and organization bound what it shows and does: a
viewer's console is read-only.

Themes: --theme or $TETHER_THEME picks dark, light, high-contrast, mono, auto
(the default: dark or light from the terminal's background), or a user theme:
NAME.json in the themes directory of the user's configuration directory
(~/.config/tether/themes on Linux), or a path to a .json file. NO_COLOR (any
non-empty value) selects mono unless --theme says otherwise. A theme file
starts from a built-in theme and sets any of its colours:

  {"name": "ocean", "base": "dark", "colors": {"accent": "#268bd2", "danger": "196"}}

Colours: foreground, muted, border, accent, accentText, selectedBackground,
selectedForeground, marked, header, good, warning, danger, info; each
"#rrggbb", "#rgb", an ANSI number 0-255, or "none".`,
		Example: `  tether console
  tether console --server https://tether.example:7070 --token-file ~/.tether-token
  tether console --serve --listen 0.0.0.0:7070
  tether console --read-only --theme high-contrast`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if typed(cmd.Flags(), "listen") && !opts.serve {
				return usagef("--listen needs --serve")
			}
			if g.server != "" && opts.serve {
				return usagef("--serve runs the agent API over a local database; it cannot be combined with --server")
			}
			remote, source, err := consoleRemote(cmd, g, opts)
			if err != nil {
				return err
			}
			if remote != nil {
				return runRemoteConsole(cmd.Context(), g, opts, remote, source)
			}
			return runConsole(cmd.Context(), g, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.serve, "serve", false, "also serve the agent API in this process")
	f.StringVar(&opts.listen, "listen", defaultListen, "with --serve: address to listen on (host:port; port 0 picks a free port)")
	f.BoolVar(&opts.readOnly, "read-only", false, "hide and refuse every change")
	f.StringVar(&opts.theme, "theme", "", "theme: auto, dark, light, high-contrast, mono or a user theme name (env TETHER_THEME)")
	_ = f.SetAnnotation("theme", ownEnvAnnotation, []string{"true"}) // NO_COLOR comes between --theme and $TETHER_THEME
	f.StringVar(&opts.start, "view", "overview", "first screen: overview, clusters, jobs, events or audit")
	return cmd
}

// terminalProblem says why the console cannot run here, or "" when it can.
func terminalProblem(stdout io.Writer) string {
	if t := os.Getenv("TERM"); t == "dumb" {
		return "TERM is dumb"
	}
	f, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return "standard output is not a terminal"
	}
	return ""
}

// consoleCacheKiB is the console's SQLite page cache per connection.
const consoleCacheKiB = 4096

func runConsole(ctx context.Context, g *globals, opts consoleOptions) error {
	choice, err := consoleChoice(g, opts)
	if err != nil {
		return err
	}
	// The console reads a screen at a time: a SQLite page cache of a few
	// MiB per connection serves it (the operating system caches the file
	// too), where the server's 32 MiB ones fill as views are visited and
	// stay full (429 MB resident over 1,000,000 jobs, against 40 MB for the
	// console over --server). With --serve the agent API shares the store,
	// and keeps the server's.
	sopts := sqlite.Options{CacheKiB: consoleCacheKiB}
	if opts.serve {
		sopts = sqlite.Options{}
	}
	a, err := openAppWith(ctx, g, registry.Config{}, sopts)
	if err != nil {
		return err
	}
	defer a.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wait func() error
	serveAddr := ""
	if opts.serve {
		addr, w, closeLog, err := serveBeside(ctx, g, a, opts.listen)
		if err != nil {
			return err
		}
		defer closeLog()
		wait, serveAddr = w, addr
	}
	runErr := showConsole(ctx, g, a, choice, opts, serveAddr)
	cancel() // stops the agent API too
	if wait != nil {
		if err := wait(); err != nil && runErr == nil {
			runErr = registry.Errorf(registry.CodeUnavailable, "the agent API stopped with an error: %v", err)
		}
	}
	return runErr
}

// serveLogPath is where the agent API run beside the console logs: next to a
// SQLite database, or in the working directory for a PostgreSQL one.
func serveLogPath(g *globals) string {
	if isPostgresURL(g.db) {
		return "tether-serve.log"
	}
	return g.db + ".serve.log"
}

// serveBeside starts the agent API in this process, logging to
// serveLogPath (the terminal belongs to the console).
func serveBeside(ctx context.Context, g *globals, a *app, listen string) (addr string, wait func() error, closeLog func(), err error) {
	logPath := serveLogPath(g)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", nil, nil, registry.Errorf(registry.CodeInvalid, "cannot open the server log %s: %v", logPath, err)
	}
	addr, wait, err = startAgentAPI(ctx, a, serveOptions{listen: listen, logger: slog.New(slog.NewTextHandler(logFile, nil))})
	if err != nil {
		logFile.Close()
		return "", nil, nil, err
	}
	return addr, wait, func() { logFile.Close() }, nil
}

// consoleChoice checks that the console can run here (a terminal, a known
// first screen) and picks its theme. Its errors are usage errors: exit 2.
func consoleChoice(g *globals, opts consoleOptions) (themes.Choice, error) {
	if problem := terminalProblem(g.stdout); problem != "" {
		return themes.Choice{}, &exitCodeError{code: exitUsage, msg: fmt.Sprintf(notATerminal, problem)}
	}
	if opts.start == "" {
		opts.start = "overview"
	}
	valid := false
	for _, v := range []string{"overview", "clusters", "jobs", "events", "audit"} {
		valid = valid || opts.start == v
	}
	if !valid {
		return themes.Choice{}, usagef("--view %q is not one of overview, clusters, jobs, events, audit", opts.start)
	}
	dir, _ := themes.Dir()
	choice, err := themes.Select(opts.theme, os.Getenv, dir)
	if err != nil {
		return themes.Choice{}, &exitCodeError{code: exitUsage, msg: sentence(err.Error())}
	}
	return choice, nil
}

// showConsole runs the console over a's registry until the person quits (or
// ctx ends). serveAddr is the agent API's address when this process serves
// it: the header shows it and new tokens' register command points at it.
// tether demo can show its simulated fleet with it.
func showConsole(ctx context.Context, g *globals, a *app, choice themes.Choice, opts consoleOptions, serveAddr string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serverURL := os.Getenv("TETHER_SERVER_URL")
	if serverURL == "" && serveAddr != "" {
		serverURL = agentURL(serveAddr)
	}
	// Otherwise nothing is known to listen: the console says so rather than
	// offer an address where no server may be.
	model := tui.New(tui.Options{
		Backend:   tui.NewLocal(a.reg, adminActor()),
		Theme:     choice,
		ReadOnly:  opts.readOnly,
		ServeAddr: serveAddr,
		ServerURL: serverURL,
		Source:    a.store.Path(), // a PostgreSQL URL without its password
		Start:     opts.start,
		Context:   ctx,
	})
	return runProgram(ctx, g, model, choice)
}

// runProgram runs the console until the person quits, ctx ends or the
// terminal goes away.
func runProgram(ctx context.Context, g *globals, model *tui.Model, choice themes.Choice) error {
	ctx, stop := untilTerminalGone(ctx, g.stdout)
	defer stop()
	// ctx ends on SIGINT and SIGTERM (main), and on SIGHUP or a hung-up
	// terminal (untilTerminalGone); Bubble Tea must not catch signals too:
	// when the program saw ctx end first, its own signal handler was left
	// sending a quit message nobody read, and the program waited for it
	// until SIGKILL.
	progOpts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(g.stdout), tea.WithoutSignalHandler()}
	if choice.NoColor {
		progOpts = append(progOpts, tea.WithColorProfile(colorprofile.Ascii))
	}
	_, err := tea.NewProgram(model, progOpts...).Run()
	if ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return nil // SIGINT, SIGTERM or the terminal gone: a normal way out
	}
	return err
}

// agentURL is the URL agents reach a listener at: a wildcard address
// (0.0.0.0, [::]) is replaced by this machine's name, which agents elsewhere
// can resolve, unlike the wildcard.
func agentURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		} else {
			host = "HOST"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// consoleRemote picks the admin API the console runs over, if any: --server
// (with --token-file or $TETHER_ADMIN_TOKEN, else the saved context's token
// for that server), else the current saved context unless a database was
// named. It returns nil to run over the local database.
func consoleRemote(cmd *cobra.Command, g *globals, opts consoleOptions) (*admin.Remote, string, error) {
	if g.server == "" && typed(cmd.Flags(), "token-file") {
		return nil, "", usagef("--token-file needs --server")
	}
	if opts.serve {
		return nil, "", nil // the agent API is served over a local database
	}
	server, token, err := remoteTarget(cmd, g)
	if err != nil || server == "" {
		return nil, "", err
	}
	if _, err := consoleChoice(g, opts); err != nil {
		return nil, "", err // no terminal: say so before reaching out
	}
	r, err := connectRemote(cmd.Context(), server, token)
	return r, server, err
}

// runRemoteConsole runs the console over a tether's admin API.
func runRemoteConsole(ctx context.Context, g *globals, opts consoleOptions, remote *admin.Remote, server string) error {
	choice, err := consoleChoice(g, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	model := tui.New(tui.Options{
		Backend:   remote,
		Theme:     choice,
		ReadOnly:  opts.readOnly,
		Role:      remote.Role, // the keys on offer follow the token's role (GET /whoami)
		ServerURL: server,      // agents reach the same listener
		Source:    server + " as " + remote.Actor,
		Start:     opts.start,
		Context:   ctx,
	})
	return runProgram(ctx, g, model, choice)
}
