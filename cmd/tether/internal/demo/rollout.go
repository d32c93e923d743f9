package demo

import (
	"context"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// labelsFor derives a demo cluster's labels from its name: env from the
// first word (prod, staging, edge, dev, ci), region from the second.
func labelsFor(name string) registry.Labels {
	parts := strings.Split(name, "-")
	l := registry.Labels{"env": parts[0]}
	if len(parts) > 1 {
		l["region"] = parts[1]
	}
	return l
}

// DemoRollout is the name of the rollout the demo starts.
const DemoRollout = "grafana-8.5"

// rollout starts, a few seconds in, an upgrade rolled across the prod and
// dev clusters two at a time with no failure allowed. The conflicted agent's
// cluster is in its first wave, so it usually halts there: something for
// on-call to look at, resume, retry or abort in the console.
func (f *Fleet) rollout(ctx context.Context) {
	if !f.sleep(ctx, 5*time.Second) {
		return
	}
	ctx = registry.WithActor(ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "demo"})
	if _, err := f.cfg.Registry.GetRollout(ctx, DemoRollout); err == nil {
		return // a --db reused from an earlier demo already has it
	}
	_, err := f.cfg.Registry.CreateRollout(ctx, registry.RolloutSpec{
		Name: DemoRollout, Selector: "env in (prod,dev)", Kind: registry.KindApply,
		Payload: mustJSON(map[string]any{
			"apiVersion": "apps.vworkspace.io/v1alpha1", "kind": "ApplicationInstance",
			"metadata": map[string]any{"name": "grafana", "namespace": "shared"},
			"spec":     map[string]any{"appRef": map[string]string{"catalogId": "grafana", "version": "8.5.0"}},
		}),
		MaxParallel: 2, PauseBetween: 10 * time.Second,
	})
	if err != nil && ctx.Err() == nil {
		f.log.Warn("demo rollout could not start", "err", err)
	}
}
