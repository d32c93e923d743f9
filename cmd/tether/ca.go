package main

import (
	"encoding/pem"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

func init() { register(newCACmd) }

func newCACmd(g *globals) *cobra.Command {
	return groupCommand("ca", "Manage tether's certificate authority, which issues agents' client certificates (mTLS)",
		newCAInitCmd(g), newCAShowCmd(g))
}

func newCAInitCmd(g *globals) *cobra.Command {
	var replace bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create tether's CA (never replacing one unless --replace)",
		Long: `Create tether's certificate authority: an ECDSA P-256 key and a self-signed
certificate valid 5 years, which may only issue client certificates (extended
key usage clientAuth) naming spiffe://tether/... identities.

Its private key is sealed with the key file and kept in the database, so every
replica of a PostgreSQL deployment shares it (and it is backed up with the
database; the key file that opens it is not, as for every sealed secret).

From then on an agent that sends a CSR at registration or rotation gets a
client certificate naming its cluster (URI SAN spiffe://tether/cluster/<id>),
valid as long as its credential, and serve verifies client certificates
against this CA (besides --tls-client-ca), picking it up within 10 seconds.

An existing CA is never replaced silently. --replace makes a new one: the old
one stays trusted until the certificates it issued expire (the credential
lifetime), and agents get certificates from the new one at their next
rotation.`,
		Example: `  tether ca init
  tether --db postgres://tether@db/tether --key-file /etc/tether/tether.key ca init
  tether ca init --replace`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			ca, err := api.InitCA(adminContext(ctx), replace)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, caJSONView(*ca))
			}
			_, err = fmt.Fprintf(g.stdout, "Created tether's CA %s, valid until %s. Its certificate: tether ca show\n", ca.ID, ca.NotAfter.UTC().Format(time.RFC3339))
			return err
		},
	}
	cmd.Flags().BoolVar(&replace, "replace", false, "replace the existing CA (the old one stays trusted until its certificates expire)")
	return cmd
}

func newCAShowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Print the CA bundle (PEM) that agents' client certificates chain to",
		Long: `Print the PEM bundle of tether's CA: the current certificate, then a
replaced one while certificates it issued are still valid. Give it to whatever
else must verify agents' client certificates (a TLS-terminating proxy). With
-o json: each CA's id, validity and certificate.`,
		Example: `  tether ca show > tether-client-ca.pem
  tether ca show -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			cas, err := api.CAs(adminContext(ctx))
			if err != nil {
				return err
			}
			if g.output == "json" {
				out := make([]caView, len(cas))
				for i := range cas {
					out[i] = caJSONView(cas[i])
				}
				return printJSON(g.stdout, out)
			}
			if len(cas) == 0 {
				return failf("tether has no CA yet: create one with tether ca init")
			}
			for _, ca := range cas {
				if err := pem.Encode(g.stdout, &pem.Block{Type: "CERTIFICATE", Bytes: ca.CertDER}); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

type caView struct {
	registry.CertificateAuthority
	Certificate string `json:"certificate"`
}

func caJSONView(ca registry.CertificateAuthority) caView {
	return caView{CertificateAuthority: ca, Certificate: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.CertDER}))}
}
