package registry

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text agents send is stored as they sent it, with two exceptions made here,
// the same on every store: a NUL character is refused (PostgreSQL's text
// cannot hold it, and no field of the protocol needs one), and invalid UTF-8
// is replaced by U+FFFD (so that every JSON answer and -o json stays valid).
// The agent API refuses both before they get here (server/nul.go), naming
// the field; these keep the registry's own callers to the same rule.

// agentText checks and cleans one field an agent sent.
func agentText(field string, s *string) error {
	if strings.ContainsRune(*s, 0) {
		return Errorf(CodeInvalid, "%s contains a NUL character (\\u0000), which tether does not store; remove it", field)
	}
	if !utf8.ValidString(*s) {
		*s = strings.ToValidUTF8(*s, "\uFFFD")
	}
	return nil
}

// agentConditions checks the text of Kubernetes conditions an agent sent.
func agentConditions(field string, conds []Condition) error {
	for i := range conds {
		c := &conds[i]
		for _, f := range []struct {
			name string
			v    *string
		}{{"type", &c.Type}, {"status", &c.Status}, {"reason", &c.Reason}, {"message", &c.Message}} {
			if err := agentText(fmt.Sprintf("%s[%d].%s", field, i, f.name), f.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// agentJobID refuses a job id no job can have, before the store sees it.
func agentJobID(id string) error {
	if strings.ContainsRune(id, 0) || !utf8.ValidString(id) {
		return Errorf(CodeJobNotFound, "job %q does not exist", strings.ToValidUTF8(strings.ReplaceAll(id, "\x00", `\0`), "?"))
	}
	return nil
}
