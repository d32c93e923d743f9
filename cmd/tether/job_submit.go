package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
)

// tether job submit, and waiting for a job to end (--wait).

// submittedJob is the -o json output of job submit.
type submittedJob struct {
	*registry.Job
	// Created is false when the idempotency key answered a job already
	// (open, or submitted with it within the key retention), which is
	// returned instead of a new one.
	Created bool `json:"created"`
}

func newJobSubmitCmd(g *globals) *cobra.Command {
	var (
		cluster, kind, file, payload, key string
		example                           string
		expiresIn, timeout                time.Duration
		wait                              bool
	)
	cmd := &cobra.Command{
		Use:   "submit --cluster CLUSTER --kind KIND (-f FILE | -f - | --payload JSON) | --example NAME",
		Short: "Submit a job to a cluster's agent, optionally waiting for its outcome",
		Long: `Submit a job to a cluster's agent. The payload is checked against the
cluster's allowlists (namespaces, catalog entries, operation templates).
--example NAME prints a complete payload of a kind or intent to start from
(apply, delete, ensure-application-instance, request-operation,
delete-application-instance) and submits nothing; docs/payloads.md
describes each.

With --wait the command blocks until the job ends, prints it, and exits
with a code a script can act on:

  0  the job succeeded, or was a no-op
  1  an error: the job could not be submitted, or waiting failed
  2  the command line was wrong
  3  the job ended unsuccessfully: failed, conflict, canceled or expired
  4  --timeout passed before the job ended (the job carries on)`,
		Example: `  tether job submit --example request-operation > backup.json
  tether job submit --cluster prod-eu --kind apply -f deployment.json
  tether job submit --cluster prod-eu --kind delete --payload '{"apiVersion":"v1","kind":"ConfigMap","name":"x","namespace":"apps"}'
  tether job submit --cluster prod-eu --kind intent -f backup.json --idempotency-key nightly-2024-05-01 --wait --timeout 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("example") {
				return printPayloadExample(g, cmd, example)
			}
			if strings.TrimSpace(cluster) == "" {
				return usagef("job submit needs --cluster CLUSTER, the id or name of the cluster to run the job")
			}
			if kind == "" {
				return usagef("job submit needs --kind apply, delete or intent")
			}
			k, err := parseKind(kind)
			if err != nil {
				return err
			}
			fl := cmd.Flags()
			useFile, err := payloadFromFile(fl, "job submit")
			if err != nil {
				return err
			}
			if typed(fl, "timeout") && !wait {
				return usagef("--timeout applies only with --wait")
			}
			body := []byte(payload)
			if useFile {
				if body, err = readPayload(g.stdin, file); err != nil {
					return err
				}
			}

			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			j, created, err := api.SubmitJob(adminContext(ctx), registry.JobSubmission{
				ClusterID: cluster, Kind: k, Payload: body, IdempotencyKey: key, ExpiresIn: expiresIn,
			})
			if err != nil {
				return err
			}
			g.mutated = true
			if !wait {
				return printSubmitted(g, j, created)
			}
			if g.output == "table" {
				fmt.Fprintf(g.stderr, "Submitted job %s; waiting for it to end (Ctrl-C stops waiting, not the job).\n", j.ID)
			}
			return waitJob(ctx, g, api, j, created, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "cluster id or name (required)")
	f.StringVar(&kind, "kind", "", "apply, delete or intent (required)")
	f.StringVarP(&file, "file", "f", "", "read the JSON payload from FILE, or from standard input with -")
	f.StringVar(&payload, "payload", "", "the JSON payload")
	f.StringVar(&example, "example", "", "print a complete payload of this kind or intent and submit nothing: apply, delete, ensure-application-instance, request-operation, delete-application-instance")
	f.StringVar(&key, "idempotency-key", "", "return the cluster's job with this key, open or submitted within the key retention (24h by default, serve --idempotency-retention), instead of submitting another")
	f.Var(newDuration(&expiresIn, 0), "expires-in", "how long the job may wait to be claimed before it expires")
	f.BoolVar(&wait, "wait", false, "wait until the job ends; exit 0 if it succeeded or was a no-op, 3 if it ended otherwise, 4 on --timeout")
	f.Var(newDuration(&timeout, 0), "timeout", "with --wait, give up waiting after this long (the job carries on)")
	return cmd
}

// printPayloadExample prints the payload example called name, with what the
// cluster must allow for it on standard error, so that standard output can
// be redirected into a file and submitted with -f.
func printPayloadExample(g *globals, cmd *cobra.Command, name string) error {
	for _, other := range []string{"cluster", "kind", "file", "payload", "idempotency-key", "wait"} {
		if cmd.Flags().Changed(other) {
			return usagef("--example prints a payload and submits nothing: leave out --%s", other)
		}
	}
	e, err := registry.PayloadExampleNamed(name)
	if err != nil {
		return usagef("--example: %s", registry.ErrorMessage(err))
	}
	if _, err := fmt.Fprintln(g.stdout, e.Payload); err != nil {
		return err
	}
	var needs []string
	for _, n := range []struct{ what, v string }{{"namespace", e.Namespace}, {"catalog entry", e.CatalogEntry}, {"operation template", e.OperationTemplate}} {
		if n.v != "" {
			needs = append(needs, n.what+" "+n.v)
		}
	}
	_, err = fmt.Fprintf(g.stderr, "An example %s payload (--kind %s): %s. The cluster must allow %s.\n", e.Name, e.Kind, e.Summary, strings.Join(needs, " and "))
	return err
}

// readPayload reads a payload file, or standard input for "-".
func readPayload(stdin io.Reader, file string) ([]byte, error) {
	if file == "-" {
		// One byte over the limit is enough for the registry to refuse it
		// with its own message.
		b, err := io.ReadAll(io.LimitReader(stdin, registry.MaxPayloadBytes+1))
		if err != nil {
			return nil, failf("cannot read the payload from standard input: %v", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, failf("cannot read the payload file: %v", err)
	}
	return b, nil
}

// payloadFromFile says where a command's payload comes from: -f (true) or
// --payload (false). Exactly one of them is needed; one typed on the command
// line wins over the other's value from $TETHER_PAYLOAD, $TETHER_FILE or the
// config file.
func payloadFromFile(fl *pflag.FlagSet, command string) (bool, error) {
	useFile, usePayload := fl.Changed("file"), fl.Changed("payload")
	if useFile && usePayload && typed(fl, "file") != typed(fl, "payload") {
		useFile, usePayload = typed(fl, "file"), typed(fl, "payload")
	}
	if useFile == usePayload {
		return false, usagef("%s needs the payload from exactly one of -f FILE, -f - (standard input) or --payload JSON", command)
	}
	return useFile, nil
}

func printSubmitted(g *globals, j *registry.Job, created bool) error {
	if g.output == "json" {
		return printJSON(g.stdout, submittedJob{Job: j, Created: created})
	}
	if !created {
		_, err := fmt.Fprintf(g.stdout, "Cluster %s already has job %s with idempotency key %q (%s); no new job was submitted.\n", j.ClusterID, j.ID, j.IdempotencyKey, j.State)
		return err
	}
	// The kind's intent and the target come from the payload: data, shown
	// escaped as every table shows it.
	_, err := fmt.Fprintf(g.stdout, "Submitted job %s (%s %s) to cluster %s; it is %s.\n", j.ID,
		display.Safe(describeKind(j)), orDash(display.Safe(j.Target.String())), j.ClusterID, j.State)
	return err
}

// waitJob blocks until the job ends, prints it, and turns its outcome into
// the exit code: 0 for succeeded and noop, 3 for another end, 4 when
// --timeout passed first.
func waitJob(ctx context.Context, g *globals, reg admin.Service, j *registry.Job, created bool, timeout time.Duration) error {
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	final, err := reg.WaitJob(wctx, j.ID)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return failf("stopped waiting for job %s, which carries on; look at it with: tether job get %s", j.ID, j.ID)
	case wctx.Err() != nil:
		if cur, gerr := reg.GetJob(ctx, j.ID); gerr == nil {
			j = cur
		}
		if perr := printSubmitted(g, j, created); perr != nil {
			return perr
		}
		return &exitCodeError{code: exitWaitTimeout, msg: sentence(fmt.Sprintf("timed out after %s waiting for job %s, which is still %s and carries on; look at it with: tether job get %s", timeout, j.ID, j.State, j.ID))}
	default:
		return err
	}
	if g.output == "json" {
		if err := printJSON(g.stdout, submittedJob{Job: final, Created: created}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.stdout, "Job %s ended %s.\n", final.ID, describeEnd(final))
	}
	if final.State == registry.JobSucceeded || final.State == registry.JobNoop {
		return nil
	}
	return &exitCodeError{code: exitJobUnsuccessful, msg: sentence(fmt.Sprintf("job %s ended %s", final.ID, describeEnd(final)))}
}

// describeEnd says how a finished job ended, with the error that ended it
// (the agent's text, shown escaped: it reaches the admin's terminal).
func describeEnd(j *registry.Job) string {
	s := string(j.State)
	if j.Error != "" && j.Error != string(j.State) {
		s += ": " + display.Safe(oneLine(j.Error, 300))
	}
	return s
}

func describeKind(j *registry.Job) string {
	if j.Intent != "" {
		return string(j.Kind) + " " + j.Intent
	}
	return string(j.Kind)
}
