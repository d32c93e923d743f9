package admin_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// changes and reads classify every method of the Service: a new method
// must be put in one (and, if it changes anything, refused by ReadOnly).
var (
	changes = []string{"CreateCluster", "UpdateCluster", "ModifyCluster", "SetClusterEnabled", "SetClusterPaused", "DeleteCluster",
		"RotateSigningKey", "IssueToken", "RevokeToken", "ForceRotation", "RevokeCredentials", "IssueAdminToken", "SetAdminTokenSSHKeys", "RevokeAdminToken",
		"InitCA", "SubmitJob", "RequeueJob", "RequeueJobWith", "CancelJob", "RetryJob", "DeleteJob", "ExtendLease", "CreateRollout",
		"PauseRollout", "ResumeRollout", "AbortRollout", "RetryFailedRollout", "CreateWebhook", "UpdateWebhook", "DeleteWebhook",
		"RotateWebhookSecret", "SendTestWebhook", "RedeliverWebhook"}
	reads = []string{"Now", "Watch", "LatestSeq", "ListClusters", "GetCluster", "ListTokens", "ListCredentials", "RotationGrace",
		"ListAdminTokens", "CAs", "JobCounts", "QueueHealth", "FleetQueueHealth", "ListJobs", "CountJobs", "ListStuckJobs", "GetJob",
		"ShowJobPayload", "WaitJob", "JobHistory", "ListRollouts", "GetRollout", "StepRollout", "ListWebhooks", "GetWebhook",
		"WebhookDeliveries", "GetWebhookDelivery", "ListEvents", "ListAudit"}
)

// TestReadOnlyRefusesEveryChange: a read-only Service (the console with
// --read-only, over the registry itself) refuses every change with its
// error, without reaching what it wraps, whatever the caller lets through;
// and reads, the audited opening of a payload among them, pass.
func TestReadOnlyRefusesEveryChange(t *testing.T) {
	typ := reflect.TypeFor[admin.Service]()
	classified := map[string]bool{}
	for _, m := range append(append([]string{}, changes...), reads...) {
		classified[m] = true
	}
	for i := range typ.NumMethod() {
		if name := typ.Method(i).Name; !classified[name] {
			t.Errorf("admin.Service.%s is neither a change nor a read here: classify it (and refuse it in ReadOnly if it changes anything)", name)
		}
	}
	refusal := registry.Errorf(registry.CodeForbidden, "read-only")
	// Nothing is behind the wrapper: a change that reached it would panic.
	ro := reflect.ValueOf(admin.ReadOnly(admin.Service(nil), refusal))
	for _, name := range changes {
		m := ro.MethodByName(name)
		args := []reflect.Value{reflect.ValueOf(context.Background())}
		for j := 1; j < m.Type().NumIn(); j++ {
			args = append(args, reflect.Zero(m.Type().In(j)))
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("ReadOnly lets %s through", name)
				}
			}()
			out := m.Call(args)
			if err, _ := out[len(out)-1].Interface().(error); err != refusal {
				t.Errorf("%s read-only: %v, want the refusal", name, err)
			}
		}()
	}

	w := newWorld(t)
	f := seed(t, w)
	ctx := context.Background()
	if _, err := admin.ReadOnly(w.local, refusal).ShowJobPayload(ctx, f.queued.ID); err != nil {
		t.Errorf("showing a payload is a read, refused read-only: %v", err)
	}
}
