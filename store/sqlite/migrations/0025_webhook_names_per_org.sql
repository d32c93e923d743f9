-- Webhook names are unique within an organization ('' for fleet-wide
-- webhooks), not across the fleet: with one index over every name, an
-- organization's admin refused a name learned that another organization
-- used it. A name is resolved within the caller's scope (registry/webhook.go).
DROP INDEX webhooks_name;
CREATE UNIQUE INDEX webhooks_org_name ON webhooks (organization, name);
