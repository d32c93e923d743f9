package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The demo catalog: what the producer installs.
var catalog = []struct{ id, chart string }{
	{"nextcloud", "6.6.0"}, {"gitea", "10.1.4"}, {"grafana", "8.4.2"}, {"wordpress", "22.1.0"}, {"keycloak", "21.0.3"},
}

func catalogIDs() []string {
	var out []string
	for _, c := range catalog {
		out = append(out, c.id)
	}
	return out
}

var namespaces = []string{"team-a", "team-b", "shared"}

// produce submits realistic jobs at the configured rate: mostly
// ApplicationInstance applies, some backup operations, some deletes.
func (f *Fleet) produce(ctx context.Context) {
	ctx = registry.WithActor(ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "demo-producer"})
	interval := time.Duration(float64(time.Second) / f.cfg.Rate)
	generation := 0
	// Keys answer their jobs for a day: a demo run again on the same --db
	// must not reuse the last run's (another payload with a key is refused).
	run := time.Now().Unix()
	for f.sleep(ctx, jitter(interval)) {
		generation++
		c := f.clusters[rand.N(len(f.clusters))]
		app := catalog[rand.N(len(catalog))]
		ns := namespaces[rand.N(len(namespaces))]
		name := app.id + "-" + ns
		var s registry.JobSubmission
		switch r := rand.N(10); {
		case r < 6:
			s = registry.JobSubmission{Kind: registry.KindApply, Payload: mustJSON(map[string]any{
				"apiVersion": "apps.vworkspace.io/v1alpha1", "kind": "ApplicationInstance",
				"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]string{
					"app.vworkspace.io/managed-by": "control-plane", "app.vworkspace.io/cluster-id": c.ID}},
				"spec": map[string]any{"appRef": map[string]string{"catalogId": app.id, "version": app.chart}, "values": map[string]any{"replicas": 1 + rand.N(3)}},
			}), IdempotencyKey: fmt.Sprintf("applicationinstance/%s/%s@%d-%d", ns, name, run, generation)}
		case r < 8:
			s = registry.JobSubmission{Kind: registry.KindIntent, Payload: mustJSON(map[string]any{
				"intent": registry.IntentRequestOperation,
				"operation": map[string]any{
					"apiVersion": "ops.vworkspace.io/v1alpha1", "kind": "Operation",
					"metadata": map[string]any{"name": fmt.Sprintf("backup-%s-%d", name, generation), "namespace": ns},
					"spec":     map[string]any{"type": "Backup", "engine": "velero", "targetRef": map[string]string{"kind": "ApplicationInstance", "name": name}},
				},
			})}
		case r < 9:
			s = registry.JobSubmission{Kind: registry.KindIntent, Payload: mustJSON(map[string]any{
				"intent": registry.IntentDeleteApplicationInstance, "name": name, "namespace": ns,
			})}
		default:
			s = registry.JobSubmission{Kind: registry.KindDelete, Payload: mustJSON(map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "name": name + "-settings", "namespace": ns,
			}), ExpiresIn: 10 * time.Minute}
		}
		s.ClusterID = c.ID
		if _, _, err := f.cfg.Registry.SubmitJob(ctx, s); err != nil {
			if ctx.Err() != nil {
				return
			}
			f.log.Warn("demo producer could not submit", "cluster", c.Name, "err", err)
			continue
		}
		f.submitted.add()
	}
}
