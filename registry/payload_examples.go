package registry

import (
	"slices"
	"strings"
)

// PayloadExample is a complete payload of one job kind (and intent), as a
// producer would submit it: what `tether job submit --example NAME` prints
// and docs/payloads.md shows. Tests submit every example to a cluster that
// allows what it names, so none of them can drift from the rules in
// validate.go.
type PayloadExample struct {
	// Name is what --example takes: the kind, or the intent for an intent.
	Name string
	Kind JobKind
	// Summary says in one line what the job asks the agent to do.
	Summary string
	// Payload is the example, indented as the docs show it.
	Payload string
	// What the cluster's allowlists must hold for the example to be
	// accepted ("" for a list the kind does not check).
	Namespace, CatalogEntry, OperationTemplate string
}

var payloadExamples = []PayloadExample{
	{
		Name: "apply", Kind: KindApply,
		Summary:   "create or update a Kubernetes object (here an ApplicationInstance, whose catalog entry is checked too)",
		Namespace: "team-a", CatalogEntry: "nextcloud",
		Payload: `{
  "apiVersion": "apps.vworkspace.io/v1alpha1",
  "kind": "ApplicationInstance",
  "metadata": {
    "name": "nextcloud-team-a",
    "namespace": "team-a",
    "labels": {
      "app.vworkspace.io/managed-by": "control-plane"
    }
  },
  "spec": {
    "appRef": {
      "catalogId": "nextcloud",
      "version": "6.6.0"
    },
    "values": {
      "replicas": 2
    }
  }
}`,
	},
	{
		Name: "delete", Kind: KindDelete,
		Summary:   "delete a Kubernetes object named by reference",
		Namespace: "team-a",
		Payload: `{
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "name": "nextcloud-team-a-settings",
  "namespace": "team-a"
}`,
	},
	{
		Name: IntentEnsureApplicationInstance, Kind: KindIntent,
		Summary:   "make sure an application instance exists as described (the agent decides how)",
		Namespace: "team-a", CatalogEntry: "nextcloud",
		Payload: `{
  "intent": "ensure-application-instance",
  "applicationInstance": {
    "apiVersion": "apps.vworkspace.io/v1alpha1",
    "kind": "ApplicationInstance",
    "metadata": {
      "name": "nextcloud-team-a",
      "namespace": "team-a"
    },
    "spec": {
      "appRef": {
        "catalogId": "nextcloud",
        "version": "6.6.0"
      }
    }
  }
}`,
	},
	{
		Name: IntentRequestOperation, Kind: KindIntent,
		Summary:   "run an operation (backup, restore, a command) through an engine the cluster allows",
		Namespace: "team-a", OperationTemplate: "backup.velero",
		Payload: `{
  "intent": "request-operation",
  "operation": {
    "apiVersion": "ops.vworkspace.io/v1alpha1",
    "kind": "Operation",
    "metadata": {
      "name": "backup-nextcloud-team-a-7",
      "namespace": "team-a"
    },
    "spec": {
      "type": "Backup",
      "engine": "velero",
      "targetRef": {
        "kind": "ApplicationInstance",
        "name": "nextcloud-team-a"
      }
    }
  }
}`,
	},
	{
		Name: IntentDeleteApplicationInstance, Kind: KindIntent,
		Summary:   "remove an application instance and what it owns",
		Namespace: "team-a",
		Payload: `{
  "intent": "delete-application-instance",
  "name": "nextcloud-team-a",
  "namespace": "team-a"
}`,
	},
}

// PayloadExamples returns every example, one per kind and intent.
func PayloadExamples() []PayloadExample { return slices.Clone(payloadExamples) }

// PayloadExampleNamed returns the example called name (a kind, or an
// intent); "intent" alone names the first intent's. CodeInvalid lists the
// names when there is none.
func PayloadExampleNamed(name string) (PayloadExample, error) {
	name = strings.TrimSpace(name)
	for _, e := range payloadExamples {
		if e.Name == name || (name == string(KindIntent) && e.Kind == KindIntent) {
			return e, nil
		}
	}
	names := make([]string, len(payloadExamples))
	for i, e := range payloadExamples {
		names[i] = e.Name
	}
	return PayloadExample{}, Errorf(CodeInvalid, "there is no payload example %q; there is one for each of %s", name, strings.Join(names, ", "))
}
