// Package sealtest makes values of the earlier formats of internal/seal, for
// tests of what reads them.
package sealtest

import (
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
)

// SealActionV1 returns a copy of a with its secrets sealed as planners
// before format v2 sealed them: each bound to aad (the job's KV key) and
// its field's name only, with the Service Bus SAS keys of queues and topics
// sharing one name. It is written from that format's description, not from
// the code that opens it, so that a test of the upgrade checks the one
// against the other.
func SealActionV1(s *seal.Sealer, a *contracts.JobAction, aad string) *contracts.JobAction {
	c := contracts.JobProperties{Action: a}.Clone().Action
	for act := c; act != nil; act = act.ErrorAction {
		for _, f := range act.Secrets() {
			if *f.Value == "" {
				continue
			}
			name := f.Field
			if f.Name() == "sasKey" {
				name = "serviceBus.authentication.sasKey"
			}
			// The cipher and its framing did not change: only the prefix
			// and the additional data did.
			v2 := s.Seal([]byte(*f.Value), aad+"\x00"+name)
			*f.Value = seal.PrefixV1 + strings.TrimPrefix(v2, seal.Prefix)
		}
	}
	return c
}
