// Package sealed says where each kind of sealed value is stored, for both
// stores' SealedPage and SealedSwap.
package sealed

import (
	"fmt"

	"github.com/tetherhq/tether/registry"
)

// Column is where a kind of sealed value lives.
type Column struct {
	Table, ID, Sealed string
	Where             string // selects the rows that hold one ("" : every row)
}

var columns = map[registry.SealedKind]Column{
	registry.SealedHMACKey:         {Table: "credentials", ID: "id", Sealed: "sealed_hmac", Where: "sealed_hmac IS NOT NULL"},
	registry.SealedWebhookSecret:   {Table: "webhooks", ID: "id", Sealed: "sealed_secret"},
	registry.SealedWebhookPrevious: {Table: "webhooks", ID: "id", Sealed: "sealed_previous_secret", Where: "sealed_previous_secret IS NOT NULL"},
	registry.SealedSigningKey:      {Table: "cluster_signing_keys", ID: "id", Sealed: "sealed_private"},
	registry.SealedCAKey:           {Table: "certificate_authorities", ID: "id", Sealed: "sealed_key"},
	registry.SealedJobPayload:      {Table: "jobs", ID: "id", Sealed: "payload", Where: "payload_sealed"},
	registry.SealedSSHHostKey:      {Table: "ssh_host_keys", ID: "id", Sealed: "sealed_private"},
}

// Of returns the column of kind.
func Of(kind registry.SealedKind) (Column, error) {
	c, ok := columns[kind]
	if !ok {
		return c, registry.Errorf(registry.CodeInvalid, "unknown kind of sealed value %q", kind)
	}
	return c, nil
}

// PageSQL is the query of one page: after and limit are its two arguments,
// written with ph(1) and ph(2).
func (c Column) PageSQL(ph func(int) string) string {
	where := c.ID + " > " + ph(1)
	if c.Where != "" {
		where = c.Where + " AND " + where
	}
	return fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s ORDER BY %s LIMIT %s", c.ID, c.Sealed, c.Table, where, c.ID, ph(2))
}

// SwapSQL replaces one value if it is still the old one: new, id, old.
func (c Column) SwapSQL(ph func(int) string) string {
	return fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s = %s AND %s = %s", c.Table, c.Sealed, ph(1), c.ID, ph(2), c.Sealed, ph(3))
}
