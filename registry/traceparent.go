package registry

// ValidTraceparent reports whether s is empty or a W3C trace context header
// value of version 00 (https://www.w3.org/TR/trace-context/#traceparent-header):
// "00-" 32 hex digits (the trace id, not all zero) "-" 16 hex digits (the
// parent span id, not all zero) "-" 2 hex digits (the flags). Lower-case
// only, as the specification requires. The registry stores it with a job
// and never reads it otherwise; checking it keeps junk from reaching agents.
func ValidTraceparent(s string) bool {
	if s == "" {
		return true
	}
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	return lowerHex(s[3:35]) && lowerHex(s[36:52]) && lowerHex(s[53:55]) &&
		s[3:35] != "00000000000000000000000000000000" && s[36:52] != "0000000000000000"
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
