package contracts

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// TraceParentHeader is the W3C Trace Context header, carried on execution
// messages and sent on with every action.
const TraceParentHeader = "traceparent"

// TraceParent returns the trace context of an attempt as the planner
// starts it: the trace id is the attempt's occurrence id (32 hex digits,
// the size of a trace id), the parent span id is derived from it, and the
// trace is sampled. Every delivery of the attempt belongs to one trace.
func TraceParent(occurrenceID string) string {
	sum := sha256.Sum256([]byte("dispatch/" + occurrenceID))
	return "00-" + traceID(occurrenceID) + "-" + hex.EncodeToString(sum[:8]) + "-01"
}

// ChildTraceParent returns a trace context in the trace of parent (a
// traceparent value) with span id span (16 hex digits), keeping parent's
// flags; a parent that is not a valid version-00 trace context starts the
// trace of occurrenceID instead.
func ChildTraceParent(parent, occurrenceID, span string) string {
	parts := strings.Split(parent, "-")
	if len(parts) != 4 || parts[0] != "00" || !isHex(parts[1], 32) || !isHex(parts[2], 16) || !isHex(parts[3], 2) {
		return "00-" + traceID(occurrenceID) + "-" + span + "-01"
	}
	return "00-" + parts[1] + "-" + span + "-" + parts[3]
}

// traceID returns id when it is 32 hex digits, not all zero, else a hash of
// it.
func traceID(id string) string {
	if isHex(id, 32) && strings.Trim(id, "0") != "" {
		return strings.ToLower(id)
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
