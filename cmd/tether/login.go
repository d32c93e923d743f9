package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

func init() { register(newLoginCmd) }

// contextFile is the saved contexts: tether servers and their admin tokens,
// kept like kubectl's kubeconfig, readable by its owner only.
type contextFile struct {
	Current  string         `yaml:"current-context"`
	Contexts []savedContext `yaml:"contexts"`
}

type savedContext struct {
	Name   string `yaml:"name"`
	Server string `yaml:"server"`
	Token  string `yaml:"token"`
}

// contextPath is ~/.config/tether/config.yaml (the user's configuration
// directory on other systems).
func contextPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", registry.Errorf(registry.CodeInvalid, "cannot find your configuration directory for the saved contexts: %v (set $HOME or $XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(dir, "tether", "config.yaml"), nil
}

// loadContexts reads the saved contexts; a missing file is none.
func loadContexts() (*contextFile, string, error) {
	path, err := contextPath()
	if err != nil {
		return nil, "", err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &contextFile{}, path, nil
	}
	if err != nil {
		return nil, path, registry.Errorf(registry.CodeInvalid, "cannot read the saved contexts: %v", err)
	}
	var cf contextFile
	if err := yaml.Unmarshal(b, &cf); err != nil {
		return nil, path, registry.Errorf(registry.CodeInvalid, "%s is not a tether context file: %v (fix it, or remove it and run tether login again)", path, err)
	}
	return &cf, path, nil
}

func (cf *contextFile) current() *savedContext {
	for i := range cf.Contexts {
		if cf.Contexts[i].Name == cf.Current {
			return &cf.Contexts[i]
		}
	}
	return nil
}

// save writes the file with mode 0600 (it holds tokens), replacing it whole
// so that a crash leaves the old one or the new one, never half of one.
func (cf *contextFile) save(path string) error {
	b, err := yaml.Marshal(cf)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return registry.Errorf(registry.CodeInvalid, "cannot create %s: %v", filepath.Dir(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return registry.Errorf(registry.CodeInvalid, "cannot write the saved contexts: %v", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(b)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err == nil {
			return nil
		}
	}
	tmp.Close()
	return registry.Errorf(registry.CodeInvalid, "cannot write the saved contexts to %s: %v", path, err)
}

// readTokenFile reads an admin token from a file, or from standard input
// for "-": never from the command line, where ps and shell history see it.
func readTokenFile(g *globals, file string) (string, error) {
	var b []byte
	var err error
	if file == "-" {
		line, rerr := bufio.NewReader(g.stdin).ReadString('\n')
		b, err = []byte(line), rerr
		if err != nil && line != "" {
			err = nil
		}
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return "", usagef("cannot read the admin token from %s: %v", file, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", usagef("%s holds no admin token", file)
	}
	return tok, nil
}

func newLoginCmd(g *globals) *cobra.Command {
	var tokenFile, name string
	cmd := &cobra.Command{
		Use:   "login URL --token-file FILE [--name NAME]",
		Short: "Save a tether server and an admin token, so that the console and CLI reach it remotely",
		Long: `Check an admin token against a tether server and save both as a context in
~/.config/tether/config.yaml (mode 0600), then make it the current one.
tether console and every admin command (cluster, job, events, ...) then
run over that server's admin API instead of a local database, unless --db
(or $TETHER_DB) names one; a context stays current until another login.

The token comes from a file, or from standard input with --token-file -,
never from the command line. 'tether admin-token create' issues tokens.`,
		Example: `  tether admin-token create --name alice --role operator -o json | jq -r .token > ~/.tether-token
  tether login https://tether.example:7070 --token-file ~/.tether-token
  tether console`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tokenFile == "" {
				return usagef("--token-file is required: the file holding the admin token (- for standard input)")
			}
			tok, err := readTokenFile(g, tokenFile)
			if err != nil {
				return err
			}
			server := strings.TrimRight(args[0], "/")
			u, err := url.Parse(server)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usagef("%q is not a tether server's URL: give http(s)://HOST:PORT", args[0])
			}
			if name == "" {
				name = u.Host
			}
			remote, err := connectRemote(cmd.Context(), server, tok)
			if err != nil {
				return err
			}
			cf, path, err := loadContexts()
			if err != nil {
				return err
			}
			saved := savedContext{Name: name, Server: server, Token: tok}
			replaced := false
			for i := range cf.Contexts {
				if cf.Contexts[i].Name == name {
					cf.Contexts[i], replaced = saved, true
				}
			}
			if !replaced {
				cf.Contexts = append(cf.Contexts, saved)
			}
			cf.Current = name
			if err := cf.save(path); err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, map[string]string{"context": name, "server": server, "actor": remote.Actor, "role": string(remote.Role), "org": remote.Org, "file": path})
			}
			scope := "every organization"
			if remote.Org != "" {
				scope = "organization " + remote.Org
			}
			fmt.Fprintf(g.stdout, "Logged in to %s as %s (role %s, %s).\nSaved as context %q in %s; tether console and every admin command now run over it, unless --db (or $TETHER_DB) names a database.\n",
				server, remote.Actor, remote.Role, scope, name, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the admin token (- for standard input)")
	cmd.Flags().StringVar(&name, "name", "", "the context's name (default: the server's host:port)")
	return cmd
}

// connectRemote opens the admin API of server with token and checks both.
func connectRemote(ctx context.Context, server, token string) (*admin.Remote, error) {
	c, err := adminclient.New(server, token)
	if err != nil {
		return nil, usagef("%v", err)
	}
	r, err := admin.NewRemote(ctx, c)
	if err != nil {
		return nil, registry.Errorf(registry.ErrorCode(err), "%s: %s", server, registry.ErrorMessage(err))
	}
	return r, nil
}
