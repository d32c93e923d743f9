package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Every flag of every command can also come from the environment, and the
// commands that define --config (serve) from a YAML file. One place does it
// for all of them, after cobra has parsed the command line and before the
// command runs, so that a flag added anywhere gets both for free:
//
//	command line  >  TETHER_<FLAG>  >  --config file  >  the flag's default
//
// A value taken from the environment or the file counts as given
// (pflag's Changed), exactly as if it had been typed.

// envPrefix starts every environment variable tether reads for a flag.
const envPrefix = "TETHER_"

// notFromEnv are flags that make no sense to set for every invocation.
var notFromEnv = map[string]bool{"help": true, "version": true}

// ownEnvAnnotation marks a flag that reads its TETHER_ variable itself, with
// a precedence of its own (console --theme: the flag, then NO_COLOR, then
// $TETHER_THEME), so that the generic lookup leaves it alone:
//
//	f.SetAnnotation("theme", ownEnvAnnotation, []string{"true"})
const ownEnvAnnotation = "tether-reads-own-env"

// envName is the environment variable of a flag: --tls-client-ca reads
// TETHER_TLS_CLIENT_CA.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnvironment sets every flag of cmd that the command line left alone
// from its TETHER_<FLAG> variable, when that is set and not empty.
func applyEnvironment(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || notFromEnv[f.Name] || f.Annotations[ownEnvAnnotation] != nil {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = usagef("$%s (for --%s): %v", name, f.Name, serr)
			return
		}
		setSource(cmd.Flags(), f.Name, "$"+name)
	})
	return err
}

// sourceAnnotation records where a flag's value came from when it was not
// the command line ("$TETHER_LOG_FORMAT", "config file serve.yaml line 3"),
// so that a value the command refuses later, once every flag is known
// (--log-format json|text, --retain-jobs-state), is reported with its
// origin too (withFlagSources).
const sourceAnnotation = "tether-value-source"

func setSource(fs *pflag.FlagSet, name, source string) {
	_ = fs.SetAnnotation(name, sourceAnnotation, []string{source})
}

// typed reports whether the command line itself set the flag, rather than
// $TETHER_<FLAG> or the config file. A flag that only means something next to
// another (console --listen without --serve, --timeout without --wait) is a
// usage error when typed alone; the same value from the environment, which is
// set for every invocation (TETHER_LISTEN exported for serve), is just not
// used.
func typed(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed && len(f.Annotations[sourceAnnotation]) == 0
}

// namesFlag reports whether msg mentions --name itself, not a longer flag
// that starts with it (--tls-key in --tls-key-file).
func namesFlag(msg, name string) bool {
	flag := "--" + name
	for i := strings.Index(msg, flag); i >= 0; {
		end := i + len(flag)
		if end == len(msg) || !(msg[end] == '-' || msg[end] >= 'a' && msg[end] <= 'z') {
			return true
		}
		next := strings.Index(msg[end:], flag)
		if next < 0 {
			return false
		}
		i = end + next
	}
	return false
}

// withFlagSources adds to a usage message that names flags of cmd whose
// values came from the environment or the config file where each came
// from, unless the message says so already.
func withFlagSources(cmd *cobra.Command, msg string) string {
	if cmd == nil {
		return msg
	}
	var from []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		src := f.Annotations[sourceAnnotation]
		if len(src) == 0 || !namesFlag(msg, f.Name) || strings.Contains(msg, src[0]) {
			return
		}
		from = append(from, fmt.Sprintf("--%s is from %s", f.Name, src[0]))
	})
	if len(from) == 0 {
		return msg
	}
	return strings.TrimSuffix(strings.TrimSpace(msg), ".") + " (" + strings.Join(from, "; ") + ")"
}

// configFlag is the flag naming the YAML file a command reads its other
// flags from.
const configFlag = "config"

// applyConfigFile sets, from the file named by cmd's --config (if the
// command has one and it is set), every flag that neither the command line
// nor the environment set. The file is a YAML mapping of flag names to
// values (a list for flags that take several); an unknown key, a value of
// the wrong shape or a value the flag refuses is an error naming the file,
// the line and the key.
func applyConfigFile(cmd *cobra.Command) error {
	cf := cmd.Flags().Lookup(configFlag)
	if cf == nil || cf.Value.String() == "" {
		return nil
	}
	path := cf.Value.String()
	data, err := os.ReadFile(path)
	if err != nil {
		return usagef("cannot read the config file: %v", err)
	}
	return applyConfig(cmd.Flags(), path, data)
}

func applyConfig(fs *pflag.FlagSet, path string, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml's own messages already say "line N: ...".
		return usagef("config file %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return usagef("config file %s line %d: want a mapping of flag names to values (listen: 0.0.0.0:7070)", path, root.Line)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		at := func(n *yaml.Node) string { return fmt.Sprintf("config file %s line %d: key %q", path, n.Line, k.Value) }
		f := fs.Lookup(k.Value)
		if f == nil || k.Value == configFlag || notFromEnv[k.Value] {
			return usagef("%s is not a setting of this command (the keys are its flag names, as in --help)", at(k))
		}
		if first, dup := seen[k.Value]; dup {
			return usagef("%s is set twice (first on line %d)", at(k), first)
		}
		seen[k.Value] = k.Line
		if f.Changed {
			continue // the command line or the environment wins
		}
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				continue
			}
			if err := fs.Set(f.Name, v.Value); err != nil {
				return usagef("%s: %v", at(v), err)
			}
			setSource(fs, f.Name, fmt.Sprintf("config file %s line %d", path, v.Line))
		case yaml.SequenceNode:
			sv, ok := f.Value.(pflag.SliceValue)
			if !ok {
				return usagef("%s takes one value, not a list", at(v))
			}
			items := make([]string, 0, len(v.Content))
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					return usagef("%s: each item of the list must be a single value", at(item))
				}
				items = append(items, item.Value)
			}
			if err := sv.Replace(items); err != nil {
				return usagef("%s: %v", at(v), err)
			}
			f.Changed = true
			setSource(fs, f.Name, fmt.Sprintf("config file %s line %d", path, v.Line))
		default:
			return usagef("%s takes a value or a list, not a mapping", at(v))
		}
	}
	return nil
}

// precedenceHelp is the paragraph that --help of a command with --config
// shows.
const precedenceHelp = `Every flag can also be set in the environment as TETHER_<FLAG> (upper case,
dashes as underscores: --tls-cert is TETHER_TLS_CERT), or in the YAML file of
--config, whose keys are the flag names:

  listen: 0.0.0.0:7070
  db: postgres://tether@db/tether
  trusted-proxies: [10.0.0.0/8]

When a setting comes from several places, the command line wins over the
environment, the environment over the file, and the file over the default.`
