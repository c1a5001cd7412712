package timer

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// jobIDLen is the length of a job id: 14 base64url characters, 84 bits of
// SHA-256. Two of 1,000,000 jobs share one with a chance of about 3e-14, and
// an id of up to 14 bytes takes 16 bytes of Redis memory with its header and
// terminator.
const jobIDLen = 14

// partitionKeys are the KEYS of every partition script, in this order.
type partitionKeys []string

// Positions in partitionKeys, for the Go side; the Lua side uses KEYS[1..4].
const (
	keyDue = iota
	keyInflight
	keyState
	keySlots
	keyStatus
)

// newPartitionKeys returns the keys of partition p:
// <prefix>:{pNN}:due, :inflight, :state, :slots and :status.
func newPartitionKeys(prefix string, p int) partitionKeys {
	base := prefix + ":" + partitionTag(p) + ":"
	return partitionKeys{base + "due", base + "inflight", base + "state", base + "slots", base + "status"}
}

// partitionTag returns the hash tag of partition p, "{p07}".
func partitionTag(p int) string { return fmt.Sprintf("{p%02d}", p) }

// builtKey marks an index that was built since Redis was last emptied.
func builtKey(prefix string) string { return prefix + ":built" }

// lockKey holds the owner of the maintenance lease name.
func lockKey(prefix, name string) string { return prefix + ":lock:" + name }

// partitionOf returns the partition of jobKey: FNV-1a (32 bits) modulo n.
func partitionOf(jobKey string, n int) int {
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for i := range len(jobKey) {
		h ^= uint32(jobKey[i])
		h *= prime
	}
	return int(h % uint32(n))
}

// jobID returns the compact id of jobKey used inside Redis.
func jobID(jobKey string) string {
	sum := sha256.Sum256([]byte(jobKey))
	return base64.RawURLEncoding.EncodeToString(sum[:11])[:jobIDLen]
}

// entryID returns the id of the entry (jobKey, slot): the job id followed by
// the slot, so the Lua side can split it at jobIDLen.
func entryID(jobKey, slot string) string { return jobID(jobKey) + slot }
