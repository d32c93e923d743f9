package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tetherhq/tether/apiclient"
)

// handle takes one polled job through ack, run and result.
func (a *Agent) handle(ctx context.Context, j apiclient.Job) {
	log := a.log.With("job", j.ID, "kind", j.Kind, "attempt", j.Attempt)
	// The job's requests (ack, status, heartbeats, result) join its trace.
	ctx = apiclient.WithTraceparent(ctx, j.Traceparent)
	if j.Expired(time.Now()) {
		// Seed 000: skip it and say so. A noop result is accepted for a job
		// never acked.
		log.Info("job expired before it could run; reporting noop")
		if err := a.client.Result(ctx, j.ID, "", apiclient.ExpiredResult(time.Now())); err != nil && !errors.Is(err, apiclient.ErrJobGone) {
			log.Warn("could not report an expired job", "err", err)
		}
		return
	}
	// Verify before claiming: a job that cannot be verified now (the keys
	// cannot be fetched) stays queued for a later poll instead of being
	// claimed and then failed for a fault that is not its own.
	// Decrypt first: the signature covers the plaintext.
	undecryptable := a.decryptPayload(&j)
	var why string
	if undecryptable == "" {
		var err error
		if why, err = a.checkSignature(ctx, j); err != nil {
			log.Warn("cannot verify the job's signature now; leaving it queued", "err", err)
			return
		}
	}
	claim, err := a.client.Ack(ctx, j.ID)
	switch {
	case errors.Is(err, apiclient.ErrNotClaimed), errors.Is(err, apiclient.ErrJobGone):
		log.Debug("job taken by someone else or gone", "err", err)
		return
	case err != nil:
		log.Warn("ack failed", "err", err)
		return
	}
	if j.IdempotencyKey != "" && a.ledger.Done(j.IdempotencyKey) {
		log.Info("job already applied (idempotency key seen); reporting noop", "key", j.IdempotencyKey)
		a.report(ctx, log, j.ID, claim.ClaimID, apiclient.Result{Outcome: apiclient.OutcomeNoop, Error: "already applied (idempotency key " + j.IdempotencyKey + ")", Timestamp: time.Now().UTC()})
		return
	}
	if undecryptable != "" {
		// Never guess at a payload: say so to tether (the result and an
		// Audit event). The reason holds no decrypted material.
		log.Warn("job payload does not decrypt; not running it", "reason", undecryptable)
		a.emit(apiclient.Event{Kind: apiclient.EventAudit, EventKey: EventPayloadDecryptionFailed, Message: undecryptable,
			ResourceRef: clusterRef(a.client.Credential().ClusterID), Timestamp: time.Now().UTC()})
		a.report(ctx, log, j.ID, claim.ClaimID, failed(undecryptable))
		return
	}
	if why != "" {
		// Never run a payload that is not the one tether signed; say so to
		// tether (the result and an Audit event), not only in our log.
		log.Warn("job payload signature invalid; not running it", "reason", why)
		a.emit(apiclient.Event{Kind: apiclient.EventAudit, EventKey: EventPayloadSignatureInvalid, Message: why,
			ResourceRef: clusterRef(a.client.Credential().ClusterID), Timestamp: time.Now().UTC()})
		a.report(ctx, log, j.ID, claim.ClaimID, failed(why))
		return
	}
	log.Info("job claimed", "lease_until", claim.LeaseExpiresAt)
	res, stop := a.execute(ctx, j, claim, log)
	if stop != nil {
		// Canceled, reclaimed or gone: tether no longer wants a result from us.
		log.Info("job stopped", "reason", stop)
		return
	}
	if ctx.Err() != nil && !claim.LeaseExpiresAt.IsZero() {
		// Shutting down: let the lease lapse; the reaper requeues the job.
		log.Info("job interrupted by shutdown; its lease will lapse and tether will requeue it")
		return
	}
	if a.report(ctx, log, j.ID, claim.ClaimID, res) && res.Outcome == apiclient.OutcomeSucceeded {
		if err := a.ledger.Record(j.IdempotencyKey); err != nil {
			log.Warn("could not record the idempotency key", "err", err)
		}
	}
}

// report posts the result; it runs even after shutdown began (a job that ran
// must not lose its outcome), bounded in time.
func (a *Agent) report(ctx context.Context, log *slog.Logger, jobID, claimID string, res apiclient.Result) bool {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := a.client.Result(rctx, jobID, claimID, res); err != nil {
		log.Warn("could not report the result", "outcome", res.Outcome, "err", err)
		return false
	}
	log.Info("job finished", "outcome", res.Outcome, "error", res.Error)
	return true
}

// stopReason is why a job's command was stopped before it finished.
type stopReason struct{ err error }

func (s *stopReason) Error() string { return s.err.Error() }

// execute runs the command for the job. It returns the result to report, or
// a non-nil stop when tether said to stop (canceled, stale claim, gone).
func (a *Agent) execute(ctx context.Context, j apiclient.Job, claim apiclient.Claim, log *slog.Logger) (apiclient.Result, error) {
	input, _ := json.Marshal(j)
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)

	cmd := exec.Command("/bin/sh", "-c", a.cfg.Command)
	cmd.Stdin = bytes.NewReader(append(input, '\n'))
	cmd.Env = append(jobEnviron(os.Environ(), j.Traceparent),
		"TETHER_JOB_ID="+j.ID, "TETHER_JOB_KIND="+j.Kind, "TETHER_JOB_ATTEMPT="+strconv.Itoa(j.Attempt),
		"TETHER_JOB_IDEMPOTENCY_KEY="+j.IdempotencyKey, "TETHER_CLUSTER_ID="+a.ClusterID())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // signals reach the whole process group
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return failed("cannot capture the command's output: " + err.Error()), nil
	}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return failed("cannot start the command: " + err.Error()), nil
	}

	var wg sync.WaitGroup
	// Lease heartbeats at a third of the lease.
	if lease := leaseOf(j, claim); lease > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.keepLease(runCtx, cancelRun, j.ID, claim.ClaimID, lease/3, log)
		}()
	}
	// Status and event lines.
	var result *apiclient.Result
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "::status "):
				phase, msg, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "::status ")), " ")
				err := a.client.Status(runCtx, j.ID, claim.ClaimID, apiclient.Status{Phase: phase, Message: msg, Timestamp: time.Now().UTC()})
				if isStop(err) {
					cancelRun(&stopReason{err})
				} else if err != nil && runCtx.Err() == nil {
					log.Warn("could not post a status", "err", err)
				}
			case strings.HasPrefix(line, "::result "):
				var r apiclient.Result
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "::result ")), &r); err != nil {
					log.Warn("ignoring a ::result line that is not a JSON object", "err", err)
					continue
				}
				result = &r
			case strings.HasPrefix(line, "::event "):
				var e apiclient.Event
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "::event ")), &e); err != nil || e.Kind == "" {
					log.Warn("ignoring an ::event line that is not a JSON event with a kind")
					continue
				}
				if e.Timestamp.IsZero() {
					e.Timestamp = time.Now().UTC()
				}
				a.emit(e)
			default:
				log.Info("job output", "line", line)
			}
		}
		io.Copy(io.Discard, stdout)
	}()

	// Stop the command when told to, or on shutdown after the drain.
	exited := make(chan error, 1)
	go func() {
		<-lines
		exited <- cmd.Wait()
	}()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-runCtx.Done():
		a.terminate(cmd, exited, log)
		waitErr = errors.New("stopped")
	}
	cancelRun(nil)
	wg.Wait()

	if cause := context.Cause(runCtx); cause != nil {
		var sr *stopReason
		if errors.As(cause, &sr) {
			return apiclient.Result{}, sr.err
		}
	}
	now := time.Now().UTC()
	if result != nil {
		if result.Timestamp.IsZero() {
			result.Timestamp = now
		}
		if result.Outcome == "" {
			result.Outcome = apiclient.OutcomeSucceeded
			if waitErr != nil {
				result.Outcome = apiclient.OutcomeFailed
			}
		}
		if (result.Outcome == apiclient.OutcomeFailed || result.Outcome == apiclient.OutcomeConflict) && result.Error == "" {
			result.Error = exitError(waitErr, stderr.last())
		}
		return *result, nil
	}
	if waitErr != nil {
		if ctx.Err() != nil {
			return apiclient.Result{Outcome: apiclient.OutcomeFailed, Error: "the agent stopped before the job finished", Timestamp: now}, nil
		}
		return apiclient.Result{Outcome: apiclient.OutcomeFailed, Error: exitError(waitErr, stderr.last()), Timestamp: now}, nil
	}
	return apiclient.Result{Outcome: apiclient.OutcomeSucceeded, Timestamp: now}, nil
}

func failed(msg string) apiclient.Result {
	return apiclient.Result{Outcome: apiclient.OutcomeFailed, Error: msg, Timestamp: time.Now().UTC()}
}

func leaseOf(j apiclient.Job, c apiclient.Claim) time.Duration {
	if c.LeaseExpiresAt.IsZero() {
		return 0
	}
	if j.LeaseSeconds > 0 {
		return time.Duration(j.LeaseSeconds) * time.Second
	}
	return max(time.Until(c.LeaseExpiresAt), 3*time.Second)
}

// isStop reports whether tether told the agent to stop working on a job.
func isStop(err error) bool {
	return errors.Is(err, apiclient.ErrJobCanceled) || errors.Is(err, apiclient.ErrStaleClaim) || errors.Is(err, apiclient.ErrJobGone)
}

// keepLease heartbeats until ctx ends; it stops the job when tether says the
// claim is gone, or when the lease ran out without a successful heartbeat.
func (a *Agent) keepLease(ctx context.Context, stop context.CancelCauseFunc, jobID, claimID string, every time.Duration, log *slog.Logger) {
	every = max(every, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	leaseEnd := time.Now().Add(3 * every)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := context.WithDeadline(ctx, leaseEnd)
		until, err := a.client.Heartbeat(hctx, jobID, claimID)
		cancel()
		switch {
		case err == nil:
			if !until.IsZero() {
				leaseEnd = until
			}
		case isStop(err):
			stop(&stopReason{err})
			return
		case ctx.Err() != nil:
			return
		case !time.Now().Before(leaseEnd):
			stop(&stopReason{fmt.Errorf("lease lost: no heartbeat got through before it ended: %w", err)})
			return
		default:
			log.Warn("heartbeat failed; retrying", "err", err)
		}
	}
}

// terminate stops the command's process group: SIGTERM, then SIGKILL after
// the grace.
func (a *Agent) terminate(cmd *exec.Cmd, exited <-chan error, log *slog.Logger) {
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-exited:
		return
	case <-time.After(a.cfg.KillGrace):
	}
	log.Warn("command ignored SIGTERM; killing it")
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-exited
}

func exitError(err error, lastStderr string) string {
	msg := "command failed"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg = fmt.Sprintf("command exited with status %d", ee.ExitCode())
	} else if err != nil {
		msg = "command failed: " + err.Error()
	}
	if lastStderr != "" {
		msg += ": " + lastStderr
	}
	return msg
}

// tailBuffer keeps the last lines written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-8192:]
	}
	return len(p), nil
}

func (t *tailBuffer) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// jobEnviron is the agent's environment for a job's command, with the job's
// trace context as TRACEPARENT (the variable OpenTelemetry's SDKs and tools
// such as otel-cli read), so that what the command does joins the job's
// trace. A TRACEPARENT or TRACESTATE the agent itself was started with
// belongs to no job and is dropped.
func jobEnviron(environ []string, traceparent string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "TRACEPARENT=") && !strings.HasPrefix(kv, "TRACESTATE=") {
			out = append(out, kv)
		}
	}
	if traceparent != "" {
		out = append(out, "TRACEPARENT="+traceparent)
	}
	return out
}
