package timer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A job whose overlap policy is not Allow has, while an occurrence of its
// schedule is in flight (dispatched and not over), a running mark: the key
// <prefix>:{pNN}:running:<job id>, in its partition's hash slot, holding
//
//	occurrence|expected (unix ms)|expiry (unix ms)
//
// The expiry bounds how long a lost result keeps the mark: past it the mark
// counts as absent, whatever the key's own TTL (set a minute later, only so
// that Redis forgets it). The mark is derived state like the rest of the
// timer: a Redis that lost it lets at most one occurrence overlap.

// runningKey returns the running mark's key of jobKey.
func (ix *Index) runningKey(jobKey string) string {
	return ix.cfg.Prefix + ":" + partitionTag(partitionOf(jobKey, ix.cfg.Partitions)) + ":running:" + jobID(jobKey)
}

// runningGrace is how long Redis keeps a mark past its expiry.
const runningGrace = time.Minute

// Admission is what Admit decided for an occurrence.
type Admission int

const (
	// Run: nothing else is in flight (or the mark is the occurrence's own);
	// the occurrence is marked running and runs now.
	Run Admission = iota
	// Buffered: another occurrence is in flight; this one waits in the
	// buffer slot and runs once it is over.
	Buffered
	// Skipped: another occurrence is in flight (and, when buffering, one
	// waits already); this one does not run.
	Skipped
)

// Occurrence names one occurrence of a job's schedule in a running mark.
type Occurrence struct {
	Number   int64
	Expected time.Time
}

func (o Occurrence) mark() string {
	return strconv.FormatInt(o.Number, 10) + "|" + strconv.FormatInt(o.Expected.UnixMilli(), 10)
}

// admitScript decides whether an occurrence of a job's schedule runs now:
// when no unexpired mark of another occurrence is there it marks the job
// running with it; otherwise, when a buffer entry is given and the buffer
// slot is empty, it stores that entry.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	KEYS[6]    the job's running mark
//	ARGV[1]    the occurrence, "number|expected ms"
//	ARGV[2]    now (unix ms)
//	ARGV[3]    the mark's expiry (unix ms)
//	ARGV[4]    the mark key's TTL (ms)
//	ARGV[5]    buffer entry id, "" not to buffer
//	ARGV[6]    buffer packed entry
//	ARGV[7]    buffer due (unix ms)
//
// Returns 0 run, 1 buffered, 2 skipped.
var admitScript = redis.NewScript(luaLib + `
local cur = redis.call('GET', KEYS[6])
local occ, expiry
if cur then
  occ, expiry = string.match(cur, '^(.*)|(%d+)$')
end
if not cur or occ == ARGV[1] or not expiry or tonumber(expiry) <= tonumber(ARGV[2]) then
  redis.call('SET', KEYS[6], ARGV[1] .. '|' .. ARGV[3], 'PX', ARGV[4])
  return 0
end
if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[3], ARGV[5]) == 0 then
  put(ARGV[5], ARGV[7], ARGV[6])
  return 1
end
return 2
`)

// Admit decides whether occurrence o of the job runs now (see Admission)
// at now, marking it running for ttl when it does. buffer, when not nil,
// is the entry that holds it in its job's buffer slot (of its job, due when
// the other's mark expires at the latest) while another occurrence is in
// flight; it is stored unless the slot holds an entry already.
func (ix *Index) Admit(ctx context.Context, jobKey string, o Occurrence, now time.Time, ttl time.Duration, buffer *Entry) (Admission, error) {
	args := []any{o.mark(), now.UnixMilli(), now.Add(ttl).UnixMilli(), (ttl + runningGrace).Milliseconds(), "", "", 0}
	if buffer != nil {
		if err := buffer.validate(); err != nil {
			return 0, fmt.Errorf("admitting %s: buffer entry: %w", entryName(jobKey, ""), err)
		}
		if buffer.JobKey != jobKey {
			return 0, fmt.Errorf("admitting %s: the buffer entry belongs to another job, %q", entryName(jobKey, ""), buffer.JobKey)
		}
		args[4], args[5], args[6] = entryID(buffer.JobKey, buffer.Slot), buffer.pack(), buffer.Due.UnixMilli()
	}
	keys := append(ix.keysOf(jobKey)[:5:5], ix.runningKey(jobKey))
	n, err := admitScript.Run(ctx, ix.rdb, keys, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("admitting %s: %w", entryName(jobKey, ""), err)
	}
	return Admission(n), nil
}

// Hold marks occurrence o of the job running for ttl from now, whatever
// mark is there: a buffered occurrence that starts.
func (ix *Index) Hold(ctx context.Context, jobKey string, o Occurrence, now time.Time, ttl time.Duration) error {
	err := ix.rdb.Set(ctx, ix.runningKey(jobKey), o.mark()+"|"+strconv.FormatInt(now.Add(ttl).UnixMilli(), 10), ttl+runningGrace).Err()
	if err != nil {
		return fmt.Errorf("marking %s running: %w", entryName(jobKey, ""), err)
	}
	return nil
}

// overScript clears a job's running mark when it is the occurrence's (or
// absent, or expired) and then makes the job's buffered entry, if pending,
// due now.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	KEYS[6]    the job's running mark
//	ARGV[1]    the occurrence, "number|expected ms"
//	ARGV[2]    now (unix ms)
//	ARGV[3]    buffer entry id
//
// Returns 1 when a buffered entry was made due, else 0.
var overScript = redis.NewScript(luaLib + `
local cur = redis.call('GET', KEYS[6])
if cur then
  local occ, expiry = string.match(cur, '^(.*)|(%d+)$')
  if occ ~= ARGV[1] and expiry and tonumber(expiry) > tonumber(ARGV[2]) then return 0 end
  redis.call('DEL', KEYS[6])
end
local due = redis.call('ZSCORE', KEYS[1], ARGV[3])
local v = redis.call('HGET', KEYS[3], ARGV[3])
if not due or not v or tonumber(due) <= tonumber(ARGV[2]) then return 0 end
local _, _, rest = parse(v)
local off, tail
if rest then off, tail = string.match(rest, '^(-?%d*)|(.*)$') end
if not tail then return 0 end
-- The packed entry holds its expected time as an offset from its due
-- time: moving the due time moves the offset the other way.
local shifted = (tonumber(off) or 0) + tonumber(due) - tonumber(ARGV[2])
if shifted == 0 then shifted = '' else shifted = string.format('%.0f', shifted) end
put(ARGV[3], ARGV[2], pending(shifted .. '|' .. tail))
return 1
`)

// Over records that occurrence o of the job is over: its running mark goes
// (unless another occurrence holds it) and the occurrence waiting in the
// buffer slot, if any, is due now. It reports whether one was. Calling it
// again is harmless.
func (ix *Index) Over(ctx context.Context, jobKey string, o Occurrence, now time.Time, bufferSlot string) (bool, error) {
	keys := append(ix.keysOf(jobKey)[:5:5], ix.runningKey(jobKey))
	n, err := overScript.Run(ctx, ix.rdb, keys, o.mark(), now.UnixMilli(), entryID(jobKey, bufferSlot)).Int()
	if err != nil {
		return false, fmt.Errorf("ending the occurrence %d of %s: %w", o.Number, entryName(jobKey, ""), err)
	}
	return n == 1, nil
}

// Running returns the occurrence marked running for the job and when its
// mark expires; false when none is (or it expired by now).
func (ix *Index) Running(ctx context.Context, jobKey string, now time.Time) (Occurrence, time.Time, bool, error) {
	var get *redis.StringCmd
	_, err := ix.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		get = pipe.Get(ctx, ix.runningKey(jobKey))
		return nil
	})
	v, gerr := get.Result()
	if errors.Is(err, redis.Nil) || errors.Is(gerr, redis.Nil) {
		return Occurrence{}, time.Time{}, false, nil
	}
	if err != nil {
		return Occurrence{}, time.Time{}, false, fmt.Errorf("reading the running mark of %s: %w", entryName(jobKey, ""), err)
	}
	f := strings.Split(v, "|")
	if len(f) != 3 {
		return Occurrence{}, time.Time{}, false, nil
	}
	var p intParser
	o := Occurrence{Number: p.int(f[0], "occurrence"), Expected: msTime(p.int(f[1], "expected"))}
	expiry := msTime(p.int(f[2], "expiry"))
	if p.err != nil || !expiry.After(now) {
		return Occurrence{}, time.Time{}, false, nil
	}
	return o, expiry, true, nil
}
