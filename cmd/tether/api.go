package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// localOnly are the commands that work on the database or the machine
// itself, with why they cannot run over the admin API; every other admin
// command takes --server (or a saved context).
var localOnly = []struct{ command, why string }{
	{"serve", "it is the server: run it where the database is"},
	{"backup", "it copies the database file; run it on the server's machine"},
	{"restore", "it replaces the database file while no server runs; run it on the server's machine"},
	{"keys", "the key file lives beside the database, and never travels over the network; run it on the server's machine"},
	{"demo", "it runs a simulated fleet on a database and server of its own"},
}

// refusesServer says why a command does not run over --server ("": it does,
// or it needs no database at all).
func refusesServer(command string) string {
	for _, c := range localOnly {
		if command == "tether "+c.command || strings.HasPrefix(command, "tether "+c.command+" ") {
			return c.why
		}
	}
	return ""
}

// openAPI opens what an admin command works on: the admin API named
// by --server (its token from --token-file or $TETHER_ADMIN_TOKEN, else the
// saved context for that server), else the current saved context unless
// --db names a database, else the local database. close releases it.
func openAPI(cmd *cobra.Command, g *globals) (api admin.Service, close func(), err error) {
	return openAPIWith(cmd, g, registry.Config{})
}

// openAPIWith is openAPI with the configuration of a local registry.
func openAPIWith(cmd *cobra.Command, g *globals, cfg registry.Config) (api admin.Service, close func(), err error) {
	ctx := cmd.Context()
	server, token, err := remoteTarget(cmd, g)
	if err != nil {
		return nil, nil, err
	}
	if server != "" {
		r, err := connectRemote(ctx, server, token)
		if err != nil {
			return nil, nil, err
		}
		return r, func() {}, nil
	}
	a, err := openApp(ctx, g, cfg)
	if err != nil {
		return nil, nil, err
	}
	return admin.NewLocal(a.reg, adminActor()), func() { a.Close() }, nil
}

// remoteTarget says which admin API, if any, a command runs over, and with
// which token.
func remoteTarget(cmd *cobra.Command, g *globals) (server, token string, err error) {
	return remoteTargetOf(g, cmd.Flags().Changed("db"))
}

// remoteTargetOf is remoteTarget for a command line that named a database
// (--db or $TETHER_DB) or did not.
func remoteTargetOf(g *globals, dbGiven bool) (server, token string, err error) {
	server = g.server
	if server == "" && dbGiven {
		return "", "", nil
	}
	cf, _, err := loadContexts()
	if err != nil {
		return "", "", err
	}
	switch {
	case server == "":
		cur := cf.current()
		if cur == nil {
			return "", "", nil
		}
		g.viaContext = cur.Name
		return cur.Server, cur.Token, nil
	case g.tokenFile != "":
		token, err = readTokenFile(g, g.tokenFile)
		return server, token, err
	case strings.TrimSpace(os.Getenv("TETHER_ADMIN_TOKEN")) != "":
		return server, strings.TrimSpace(os.Getenv("TETHER_ADMIN_TOKEN")), nil
	}
	for _, c := range cf.Contexts {
		if strings.TrimRight(c.Server, "/") == strings.TrimRight(server, "/") {
			return server, c.Token, nil
		}
	}
	return "", "", usagef("an admin token is required with --server: --token-file FILE, $TETHER_ADMIN_TOKEN, or 'tether login %s --token-file FILE' first", server)
}
