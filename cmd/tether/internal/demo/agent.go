package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/registry"
)

// simAgent is one simulated cluster's agent, speaking the protocol over HTTP.
type simAgent struct {
	fleet     *Fleet
	cluster   *registry.Cluster
	behaviour Behaviour
	token     string

	client  *apiclient.Client
	handled int
}

func (a *simAgent) capabilities() []string {
	switch a.behaviour {
	case DiesNoLease:
		return nil // like the public operator: bearer only, no leases
	case Healthy, Degraded:
		return []string{apiclient.CapabilityHMAC, apiclient.CapabilityLease}
	}
	return []string{apiclient.CapabilityLease}
}

func (a *simAgent) run(ctx context.Context) {
	log := a.fleet.log.With("cluster", a.cluster.Name, "behaviour", a.behaviour)
	retry := apiclient.RetryPolicy{MinBackoff: 500 * time.Millisecond, MaxBackoff: 5 * time.Second}
	// Agents come up at slightly different times, as real ones do.
	if !a.fleet.sleep(ctx, jitter(2*time.Second)) {
		return
	}
	var cred apiclient.Credential
	for {
		var err error
		cred, err = apiclient.Register(ctx, a.fleet.cfg.ServerURL, a.token, apiclient.RegisterOptions{
			ClusterIDHint: a.cluster.Name, Capabilities: a.capabilities(), Retry: retry})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("demo agent could not register; retrying", "err", err)
		if !a.fleet.sleep(ctx, 5*time.Second) {
			return
		}
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: a.fleet.cfg.ServerURL, Credential: cred, Retry: retry, UserAgent: "tether-demo-agent"})
	if err != nil {
		log.Error("demo agent", "err", err)
		return
	}
	a.client = client
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go a.heartbeats(ctx)

	silentAt := time.Now().Add(time.Duration(float64(90*time.Second) / a.fleet.cfg.Speed))
	for ctx.Err() == nil {
		if a.behaviour == GoesSilent && time.Now().After(silentAt) {
			log.Info("demo agent goes silent")
			stop()
			return
		}
		jobs, err := client.Poll(ctx, 20*time.Second, 1)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("demo agent poll failed", "err", err)
				a.fleet.sleep(ctx, 2*time.Second)
			}
			continue
		}
		for _, j := range jobs {
			a.handle(ctx, j)
		}
	}
}

func (a *simAgent) heartbeats(ctx context.Context) {
	for {
		now := time.Now().UTC()
		conds := []apiclient.Condition{
			{Type: "Ready", Status: "True", Reason: "AgentRunning", Message: "Flux, Velero and cert-manager report Ready.", LastTransitionTime: &now},
			{Type: "ControllersHealthy", Status: "True", Reason: "AllControllersReady", LastTransitionTime: &now},
		}
		if a.behaviour == Degraded {
			conds = []apiclient.Condition{
				{Type: "Ready", Status: "False", Reason: "HelmReleaseFailed", Message: "3 HelmReleases failing: chart repository unreachable", LastTransitionTime: &now},
				{Type: "ControllersHealthy", Status: "False", Reason: "VeleroCrashLoop", Message: "velero-7d9f: CrashLoopBackOff", LastTransitionTime: &now},
			}
		}
		if err := a.client.Events(ctx, []apiclient.Event{apiclient.HeartbeatEvent(a.cluster.ID, now, conds)}); err != nil && ctx.Err() == nil {
			a.fleet.log.Warn("demo heartbeat failed", "cluster", a.cluster.Name, "err", err)
		}
		if !a.fleet.sleep(ctx, time.Minute) {
			return
		}
	}
}

func (a *simAgent) handle(ctx context.Context, j apiclient.Job) {
	if j.Expired(time.Now()) {
		_ = a.client.Result(ctx, j.ID, "", apiclient.ExpiredResult(time.Now()))
		return
	}
	claim, err := a.client.Ack(ctx, j.ID)
	if err != nil {
		return
	}
	a.handled++
	switch {
	case a.behaviour == DiesWithLease && a.handled%4 == 2:
		// Crash holding the lease; come back after a while. The reaper
		// requeues the job once the lease runs out.
		a.fleet.log.Info("demo agent dies holding a lease", "cluster", a.cluster.Name, "job", j.ID)
		a.fleet.sleep(ctx, 2*time.Minute)
		return
	case a.behaviour == DiesNoLease && a.handled%6 == 2:
		// The worker dies; without a lease nothing reclaims the job: it
		// waits for on-call.
		a.fleet.log.Info("demo agent loses a job it holds without a lease", "cluster", a.cluster.Name, "job", j.ID)
		return
	}
	status := func(phase, msg string) error {
		err := a.client.Status(ctx, j.ID, claim.ClaimID, apiclient.Status{Phase: phase, Message: msg, Timestamp: time.Now().UTC(),
			Conditions: []apiclient.Condition{{Type: "Reconciling", Status: "True", Reason: phase, Message: msg}}})
		if errors.Is(err, apiclient.ErrJobCanceled) || errors.Is(err, apiclient.ErrStaleClaim) || errors.Is(err, apiclient.ErrJobGone) {
			return err
		}
		return nil
	}
	if status("Reconciling", "applying "+j.Kind) != nil {
		return
	}
	work := jitter(3 * time.Second)
	if !a.fleet.sleep(ctx, work/2) {
		return
	}
	if status("Progressing", "waiting for resources to become ready") != nil {
		return
	}
	if !a.fleet.sleep(ctx, work/2) {
		return
	}
	res := apiclient.Result{Outcome: apiclient.OutcomeSucceeded, Timestamp: time.Now().UTC()}
	switch r := rand.N(20); {
	case a.behaviour == Conflicted && j.Kind == "apply" && r < 8:
		res = apiclient.Result{Outcome: apiclient.OutcomeConflict, Timestamp: time.Now().UTC(),
			Error: `Apply failed with 1 conflict: conflict with "helm-controller" using apps.vworkspace.io/v1alpha1: .spec.values.replicas`}
	case r == 0:
		res = apiclient.Result{Outcome: apiclient.OutcomeFailed, Timestamp: time.Now().UTC(),
			Error: "HelmReleaseFailed: chart repository unreachable: dial tcp 10.0.0.1:443: i/o timeout"}
	case r == 1:
		res = apiclient.Result{Outcome: apiclient.OutcomeNoop, Timestamp: time.Now().UTC()}
	}
	if err := a.client.Result(ctx, j.ID, claim.ClaimID, res); err != nil && ctx.Err() == nil {
		a.fleet.log.Warn("demo result failed", "cluster", a.cluster.Name, "job", j.ID, "err", err)
		return
	}
	var m struct {
		Kind     string `json:"kind"`
		Metadata struct{ Name, Namespace string }
	}
	if res.Outcome == apiclient.OutcomeSucceeded && j.Kind == "apply" && json.Unmarshal(j.Payload, &m) == nil {
		now := time.Now().UTC()
		_ = a.client.Events(ctx, []apiclient.Event{{
			Kind: apiclient.EventConditionTransition, EventKey: fmt.Sprintf("ready/%s/%s/%s", m.Metadata.Namespace, m.Metadata.Name, j.IdempotencyKey),
			ResourceRef: apiclient.ResourceRef{APIVersion: "apps.vworkspace.io/v1alpha1", Kind: m.Kind, Namespace: m.Metadata.Namespace, Name: m.Metadata.Name},
			Conditions:  []apiclient.Condition{{Type: "Ready", Status: "True", Reason: "HelmReleaseReady", Message: "Release reconciliation succeeded.", LastTransitionTime: &now}},
			Timestamp:   now,
		}})
	}
}
