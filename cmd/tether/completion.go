package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// Shell completion (tether completion bash|zsh|fish|powershell) completes
// commands and flags, and these values from the database: cluster names,
// job ids, rollout names, token ids, webhook and admin-token names; and the
// fixed sets of states, kinds,
// views and output formats. They are attached here, by the argument names
// in each command's Use line and by flag names, so that a new command gets
// them by naming its arguments as the others do (CLUSTER, JOB_ID, ROLLOUT,
// TOKEN_ID).

type completer func(ctx context.Context, g *globals, toComplete string) []string

// argCompleters complete a command's first argument, by its name in Use.
var argCompleters = map[string]completer{
	"CLUSTER":   completeClusters,
	"[CLUSTER]": completeClusters,
	"JOB_ID":    completeJobs,
	"ROLLOUT":   completeRollouts,
	"TOKEN_ID":  completeTokens,
}

// nameCompleters complete a NAME argument, by the command's group.
var nameCompleters = map[string]completer{
	"webhook":     completeWebhooks,
	"admin-token": completeAdminTokens,
}

// flagCompleters complete flag values, by flag name.
var flagCompleters = map[string]completer{
	"cluster":            completeClusters,
	"kind":               fixed("apply", "delete", "intent"),
	"view":               fixed("overview", "clusters", "jobs", "events", "audit"),
	"output":             fixed("table", "wide", "json", "yaml", "jsonpath="),
	"mode":               fixed(string(registry.ModePull), string(registry.ModePush), string(registry.ModeGitOps)),
	"role":               fixed("viewer", "operator", "admin"),
	"theme":              fixed("auto", "dark", "light", "high-contrast", "mono"),
	"log-format":         fixed("text", "json"),
	"log-level":          fixed("debug", "info", "warn", "error"),
	"capabilities":       fixed("hmac", "lease", "none"),
	"require-capability": fixed("hmac", "lease"),
}

// stateCompleter completes --state with the states of what the command lists.
func stateCompleter(cmd *cobra.Command) completer {
	switch cmd.Parent().Name() {
	case "job", "events", "audit":
		states := make([]string, len(registry.JobStates))
		for i, s := range registry.JobStates {
			states[i] = string(s)
		}
		return fixed(states...)
	case "cluster":
		return fixed(string(registry.ClusterPending), string(registry.ClusterActive), string(registry.ClusterDisabled))
	}
	return nil
}

func fixed(values ...string) completer {
	return func(context.Context, *globals, string) []string { return values }
}

// addCompletions walks the command tree and attaches the completers.
func addCompletions(root *cobra.Command, g *globals) {
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		if fields := strings.Fields(cmd.Use); len(fields) > 1 && cmd.ValidArgsFunction == nil {
			c := argCompleters[fields[1]]
			if fields[1] == "NAME" && cmd.HasParent() {
				c = nameCompleters[cmd.Parent().Name()] // NAME of what: the group says
			}
			if c != nil {
				cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
					if len(args) > 0 {
						return nil, cobra.ShellCompDirectiveNoFileComp
					}
					return completeWith(cmd, g, c, toComplete)
				}
			}
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			c := flagCompleters[f.Name]
			if f.Name == "state" {
				c = stateCompleter(cmd)
			}
			if c == nil {
				return
			}
			_ = cmd.RegisterFlagCompletionFunc(f.Name, func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return completeWith(cmd, g, c, toComplete)
			})
		})
	}
	walk(root)
}

// completeWith completes with c, never failing loudly: a shell completion that
// cannot reach the database offers nothing.
func completeWith(cmd *cobra.Command, g *globals, c completer, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var out []cobra.Completion
	for _, v := range c(ctx, completionGlobals(cmd, g), toComplete) {
		if strings.HasPrefix(v, toComplete) {
			out = append(out, v)
		}
	}
	dir := cobra.ShellCompDirectiveNoFileComp
	if len(out) == 1 && strings.HasSuffix(out[0], "=") {
		dir |= cobra.ShellCompDirectiveNoSpace
	}
	return out, dir
}

// completionGlobals is g with --db, --key-file, --server and --token-file as
// the command line or the environment set them (the hooks that read the
// environment do not run while completing).
func completionGlobals(cmd *cobra.Command, g *globals) *globals {
	dbGiven := false
	for _, name := range []string{"db", "key-file", "server", "token-file"} {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			continue
		}
		if !f.Changed {
			if v := os.Getenv(envName(name)); v != "" {
				_ = f.Value.Set(v)
				f.Changed = true
			}
		}
		if name == "db" {
			dbGiven = f.Changed
		}
	}
	c := *g // the flags above are g's fields
	c.completionDBGiven = dbGiven
	return &c
}

// withAPI runs a completion over what the command would work on: the admin
// API of --server or the saved context, else the database, unless it is a
// SQLite file that does not exist (completing must not create one). A
// completion that cannot reach either offers nothing.
func withAPI(ctx context.Context, g *globals, f func(admin.Service) []string) []string {
	if g.tokenFile == "-" {
		return nil // standard input is the shell's, not a token
	}
	server, token, err := remoteTargetOf(g, g.completionDBGiven)
	if err != nil {
		return nil
	}
	if server != "" {
		r, err := connectRemote(ctx, server, token)
		if err != nil {
			return nil
		}
		return f(r)
	}
	if !isPostgresURL(g.db) {
		if _, err := os.Stat(g.db); err != nil {
			return nil
		}
	}
	a, err := openApp(ctx, g, registry.Config{})
	if err != nil {
		return nil
	}
	defer a.Close()
	return f(admin.NewLocal(a.reg, adminActor()))
}

func completeClusters(ctx context.Context, g *globals, _ string) []string {
	return withAPI(ctx, g, func(api admin.Service) []string {
		clusters, err := api.ListClusters(ctx, registry.ClusterListParams{})
		if err != nil {
			return nil
		}
		out := make([]string, 0, len(clusters))
		for _, c := range clusters {
			out = append(out, c.Name)
		}
		return out
	})
}

func completeJobs(ctx context.Context, g *globals, _ string) []string {
	return withAPI(ctx, g, func(api admin.Service) []string {
		// The jobs someone acts on: unfinished ones first, then recent.
		var out []string
		for _, states := range [][]registry.JobState{{registry.JobQueued, registry.JobInProgress}, nil} {
			jobs, err := api.ListJobs(ctx, registry.JobListParams{States: states, Limit: 200})
			if err != nil {
				return out
			}
			for _, j := range jobs {
				out = append(out, j.ID)
			}
		}
		return dedupe(out)
	})
}

func completeRollouts(ctx context.Context, g *globals, _ string) []string {
	return withAPI(ctx, g, func(api admin.Service) []string {
		rs, err := api.ListRollouts(ctx, registry.RolloutListParams{Limit: 200})
		if err != nil {
			return nil
		}
		out := make([]string, 0, len(rs))
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	})
}

func completeTokens(ctx context.Context, g *globals, _ string) []string {
	return withAPI(ctx, g, func(api admin.Service) []string {
		toks, err := api.ListTokens(ctx, "")
		if err != nil {
			return nil
		}
		out := make([]string, 0, len(toks))
		for _, t := range toks {
			out = append(out, t.ID)
		}
		return out
	})
}

func completeWebhooks(ctx context.Context, g *globals, _ string) []string {
	return withAPI(ctx, g, func(api admin.Service) []string {
		hooks, err := api.ListWebhooks(ctx)
		if err != nil {
			return nil
		}
		out := make([]string, 0, len(hooks))
		for _, h := range hooks {
			out = append(out, h.Name)
		}
		return out
	})
}

func completeAdminTokens(ctx context.Context, g *globals, _ string) []string {
	return withAPI(ctx, g, func(api admin.Service) []string {
		toks, err := api.ListAdminTokens(ctx)
		if err != nil {
			return nil
		}
		out := make([]string, 0, len(toks))
		for _, t := range toks {
			out = append(out, t.Name)
		}
		return out
	})
}

func dedupe(v []string) []string {
	seen := map[string]bool{}
	out := v[:0]
	for _, s := range v {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
