package timer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// maxSlotLen bounds Entry.Slot; slots are short names such as "retry".
const maxSlotLen = 64

// maxExactMillis bounds the unix milliseconds of Due and Expected: Redis
// scores are doubles, exact up to 2^53.
const maxExactMillis = 1 << 53

// Entry is one pending dispatch of a job: its next occurrence, or a retry or
// error action waiting beside it in another slot.
type Entry struct {
	// JobKey is contracts.JobRef.Key(): "sub/rg/collection/job".
	JobKey string
	// Slot tells apart the entries of one job: "" for the job's schedule,
	// another name (such as "retry") for a retry or error action pending
	// beside it. At most 64 bytes, without '|'.
	Slot string
	// Due is when to publish, kept to the millisecond.
	Due time.Time
	// Expected is the occurrence's scheduled time; Due differs for retries.
	// Kept to the millisecond.
	Expected time.Time
	// Occurrence is the 1-based occurrence number.
	Occurrence int64
	// Attempt is the 0-based attempt within the occurrence.
	Attempt int
	// Action is contracts.MainAction or contracts.ErrorAction.
	Action contracts.ActionName
	// Remaining is the number of occurrences left after this one; -1 means
	// no limit.
	Remaining int64
	// Revision is the KV revision of the job definition the entry was
	// computed from.
	Revision uint64
}

// Claim is an entry handed to one planner until its lease expires.
type Claim struct {
	Entry
	// Token identifies this claim; Commit and Release act only while the
	// entry still carries it.
	Token string
}

// name returns "jobKey" or "jobKey#slot" for error messages.
func (e Entry) name() string { return entryName(e.JobKey, e.Slot) }

func entryName(jobKey, slot string) string {
	if slot == "" {
		return strconv.Quote(jobKey)
	}
	return strconv.Quote(jobKey + "#" + slot)
}

// validate rejects an entry that cannot be stored or read back.
func (e Entry) validate() error {
	switch {
	case e.JobKey == "":
		return errors.New("the job key is empty")
	case len(e.Slot) > maxSlotLen || strings.Contains(e.Slot, "|"):
		return fmt.Errorf("slot %q is longer than %d bytes or contains '|'", e.Slot, maxSlotLen)
	case !exactMillis(e.Due):
		return fmt.Errorf("due time %v is zero or beyond the range of a Redis score", e.Due)
	case !exactMillis(e.Expected):
		return fmt.Errorf("expected time %v is zero or beyond the range of a Redis score", e.Expected)
	case e.Action != contracts.MainAction && e.Action != contracts.ErrorAction:
		return fmt.Errorf("action %q is neither %s nor %s", e.Action, contracts.MainAction, contracts.ErrorAction)
	case e.Occurrence < 0:
		return fmt.Errorf("occurrence %d is negative", e.Occurrence)
	case e.Attempt < 0:
		return fmt.Errorf("attempt %d is negative", e.Attempt)
	case e.Remaining < -1:
		return fmt.Errorf("remaining %d is below -1 (no limit)", e.Remaining)
	}
	return nil
}

func exactMillis(t time.Time) bool {
	ms := t.UnixMilli()
	return !t.IsZero() && -maxExactMillis < ms && ms < maxExactMillis
}
