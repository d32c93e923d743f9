package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	gossh "golang.org/x/crypto/ssh"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/sshconsole"
)

// sshOptions are serve's flags of the console over SSH (issue 32).
type sshOptions struct {
	listen      string // --ssh-listen: off when empty
	hostKeyFile string // --ssh-host-key-file: an OpenSSH private key instead of the stored one
	maxSessions int
	idleTimeout time.Duration
}

// sshDrainTimeout bounds how long shutdown waits for SSH sessions to say
// goodbye before their connections are closed.
const sshDrainTimeout = 5 * time.Second

func addSSHFlags(f *pflag.FlagSet, o *sshOptions) {
	f.StringVar(&o.listen, "ssh-listen", "", "also serve the console over SSH on this address (host:port), to admin identities holding an SSH key (tether admin-token create --ssh-key-file); default: off")
	f.StringVar(&o.hostKeyFile, "ssh-host-key-file", "", "the SSH host key to present (an unencrypted OpenSSH private key file); default: the deployment's own, generated on the first start and kept sealed in the database (tether ssh host-key prints it)")
	f.IntVar(&o.maxSessions, "ssh-max-sessions", sshconsole.DefaultMaxSessions, "console sessions open over SSH at once; more are refused")
	f.DurationVar(&o.idleTimeout, "ssh-idle-timeout", sshconsole.DefaultIdleTimeout, "end an SSH console session after this long without a keystroke")
}

func (o sshOptions) check() error {
	if o.listen == "" {
		if o.hostKeyFile != "" {
			return usagef("--ssh-host-key-file needs --ssh-listen")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usagef("--ssh-listen %q is not host:port (e.g. 0.0.0.0:2222)", o.listen)
	}
	if o.maxSessions <= 0 || o.idleTimeout <= 0 {
		return usagef("--ssh-max-sessions and --ssh-idle-timeout must be positive")
	}
	return nil
}

// sshHostKey is the key the server presents: the file brought with
// --ssh-host-key-file, or the deployment's stored one (generated on first
// use).
func sshHostKey(ctx context.Context, reg *registry.Registry, file string) (gossh.Signer, error) {
	if file == "" {
		return reg.SSHHostSigner(adminContext(ctx))
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, registry.Errorf(registry.CodeInvalid, "--ssh-host-key-file: %v", err)
	}
	signer, err := gossh.ParsePrivateKey(pem)
	if _, ok := err.(*gossh.PassphraseMissingError); ok {
		return nil, registry.Errorf(registry.CodeInvalid, "--ssh-host-key-file %s is encrypted: a server cannot type its passphrase; give an unencrypted key (ssh-keygen -p -N '' -f FILE) and protect the file instead", file)
	}
	if err != nil {
		return nil, registry.Errorf(registry.CodeInvalid, "--ssh-host-key-file %s is not an OpenSSH or PEM private key (ssh-keygen -t ed25519 -f FILE writes one)", file)
	}
	return signer, nil
}

// sshConsole is the console over SSH as serve runs it: listening from
// start, serving once serve, drained when serve stops.
type sshConsole struct {
	srv *sshconsole.Server
	ln  net.Listener
	log *slog.Logger
}

// listenSSH prepares the console over SSH (nil when --ssh-listen is off).
func listenSSH(ctx context.Context, a *app, o sshOptions, serverURL string, log *slog.Logger) (*sshConsole, error) {
	if o.listen == "" {
		return nil, nil
	}
	key, err := sshHostKey(ctx, a.reg, o.hostKeyFile)
	if err != nil {
		return nil, err
	}
	srv, err := sshconsole.New(sshconsole.Config{
		Registry: a.reg, HostKey: key, MaxSessions: o.maxSessions, IdleTimeout: o.idleTimeout,
		ServerURL: serverURL, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return nil, listenError("--ssh-listen", o.listen, err)
	}
	log.Info("console listening over SSH", "addr", ln.Addr().String(), "host_key", gossh.FingerprintSHA256(key.PublicKey()),
		"max_sessions", o.maxSessions, "idle_timeout", o.idleTimeout)
	return &sshConsole{srv: srv, ln: ln, log: log}, nil
}

// run serves until ctx ends, then drains the sessions (each is told why).
// Its series join the agent API's /metrics.
func (c *sshConsole) run(ctx context.Context, metrics *server.Server) {
	if err := metrics.RegisterCollectors(c.srv.Collectors()...); err != nil {
		c.log.Warn("the SSH console's metrics are not served", "err", err)
	}
	served := make(chan error, 1)
	go func() { served <- c.srv.Serve(c.ln) }()
	select {
	case err := <-served:
		if err != nil {
			c.log.Error("the console over SSH stopped", "err", err)
		}
		return
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.Background(), sshDrainTimeout)
	defer cancel()
	if err := c.srv.Shutdown(dctx); err != nil {
		c.log.Warn("SSH console sessions cut off at shutdown", "err", err)
	}
	<-served
}

func (c *sshConsole) close() {
	if c != nil {
		c.ln.Close()
	}
}

func init() { register(newSSHCmd) }

func newSSHCmd(g *globals) *cobra.Command {
	return groupCommand("ssh", "The console over SSH (tether serve --ssh-listen)", newSSHHostKeyCmd(g))
}

func newSSHHostKeyCmd(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "host-key",
		Short: "Print the SSH host key's fingerprint, for people to pin",
		Long: `Print the fingerprint and public key of the SSH host key that tether serve
--ssh-listen presents: the deployment's own (generated on the first start with
--ssh-listen and kept sealed in the database, the same for every replica), or
with --ssh-host-key-file the one brought in that file.

Give it to the people who connect, so that they check it on first connection
(ssh shows the same SHA256 fingerprint), or pin it in their known_hosts.`,
		Example: `  tether ssh host-key
  tether ssh host-key -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var pub gossh.PublicKey
			if file != "" {
				signer, err := sshHostKey(ctx, nil, file)
				if err != nil {
					return err
				}
				pub = signer.PublicKey()
			} else {
				a, err := openApp(ctx, g, registry.Config{})
				if err != nil {
					return err
				}
				defer a.Close()
				if pub, _, err = a.reg.SSHHostKeyFingerprint(adminContext(ctx)); err != nil {
					return err
				}
			}
			line := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(pub)))
			fp := gossh.FingerprintSHA256(pub)
			if g.output == "json" {
				return printJSON(g.stdout, map[string]string{"fingerprint": fp, "publicKey": line})
			}
			_, err := fmt.Fprintf(g.stdout, `%s
%s

Pin it in known_hosts (HOST and PORT as people reach --ssh-listen):
  [HOST]:PORT %s
`, fp, line, line)
			return err
		},
	}
	cmd.Flags().StringVar(&file, "ssh-host-key-file", "", "print this key file's instead (as given to serve --ssh-host-key-file)")
	return cmd
}
