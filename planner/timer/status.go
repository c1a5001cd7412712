package timer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
)

// A job's status is its contracts.Tally, kept in its partition's status hash
// as one string of ten '|'-separated fields:
//
//	occurrence|occurrence-time|executions|failures|faulted|last-execution|recent|last-status|last-status-time|consecutive-faults
//
// where the times are unix ms (0 for none), recent holds the tags of the
// job's latest recorded attempts (contracts.Tally.Recent): a result recorded
// again (its execution or result was delivered again) is recognised by its
// tag and changes nothing; and last-status is one of contracts.LastStatuses
// or empty; consecutive-faults counts the Faulted occurrences since the
// last one that succeeded (contracts.Tally.ConsecutiveFaults). A status of
// the first seven fields only, stored before the last status was kept, is
// read as one without a last status, and one of nine as one without
// consecutive faults.
const (
	tagLen       = contracts.TagLen
	recentTags   = contracts.RecentAttempts
	statusFields = 10
	// oldStatusFields is the length of a status stored without its last
	// status, and faultsStatusFields of one stored without its
	// consecutive faults.
	oldStatusFields    = 7
	faultsStatusFields = 9
)

// attemptTag returns the tag of an attempt id in a job's recent list.
func attemptTag(id string) string { return contracts.AttemptTag(id) }

// Record is what one result changes in the timer: the job's status, and the
// attempt that follows it, if any.
type Record struct {
	// JobKey is the job's key.
	JobKey string
	// AttemptID is the result's occurrence id. A result whose id is among
	// the job's recent ones was recorded before: recording it again changes
	// nothing.
	AttemptID string
	// Executions, Failures and Faulted are added to the job's counters
	// (contracts.Result.Counts).
	Executions, Failures, Faulted int64
	// Started is when the attempt started; it becomes the job's last
	// execution when Executions is not 0 and it is later.
	Started time.Time
	// Status is how the attempt ended (contracts.Result.LastStatus), ""
	// for an attempt of the error action, and Ended when it ended. They
	// become the job's last status unless an attempt that started later
	// was recorded before; they need Executions not 0.
	Status string
	Ended  time.Time
	// Occurrence and OccurrenceTime advance the job's status to the
	// attempt's occurrence, unless it reached one due later; 0 leaves it.
	Occurrence     int64
	OccurrenceTime time.Time
	// Next is the attempt that follows (a retry, the error action), stored
	// as Schedule stores an entry; nil for none. It must be of JobKey.
	Next *Entry
}

// recordScript records results in their jobs' statuses and schedules the
// attempt that follows each, unless the result was recorded before. It
// takes the results one after the other, in groups of recordArgs
// arguments:
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[i]    job id
//	ARGV[i+1]  attempt tag
//	ARGV[i+2]  executions to add
//	ARGV[i+3]  failures to add
//	ARGV[i+4]  faulted occurrences to add
//	ARGV[i+5]  start of the attempt (unix ms), 0 to leave the last execution
//	ARGV[i+6]  occurrence reached, 0 for none
//	ARGV[i+7]  its expected time (unix ms)
//	ARGV[i+8]  next entry id, "" for none
//	ARGV[i+9]  next due (unix ms)
//	ARGV[i+10] next packed entry
//	ARGV[i+11] how the attempt ended (contracts.Tally.LastStatus), "" to leave the last status
//	ARGV[i+12] end of the attempt (unix ms)
//
// Returns, for each result, 1 when recorded, 0 when it had been recorded
// before.
//
// Results are not recorded in the order their attempts ran: attempts of
// different occurrences (and runs) overlap, and a result delivered again
// after a failed acknowledgement comes late. So the last status is taken
// from the attempt that started last, by comparing its start with the last
// execution before that moves: a result of an attempt that started earlier
// than the one recorded leaves it. The recent tags only drop a result seen
// before; they say nothing of order.
var recordScript = redis.NewScript(luaLib + `
local TAG_LEN, RECENT = ` + strconv.Itoa(tagLen) + `, ` + strconv.Itoa(recentTags) + `
local function record(a)
  local f = status_fields(redis.call('HGET', KEYS[5], a[1]))
  local recent = f[7]
  for i = 1, #recent, TAG_LEN do
    if string.sub(recent, i, i + TAG_LEN - 1) == a[2] then return 0 end
  end
  recent = recent .. a[2]
  if #recent > TAG_LEN * RECENT then
    recent = string.sub(recent, #recent - TAG_LEN * RECENT + 1)
  end
  local function add(i, n)
    f[i] = string.format('%.0f', tonumber(f[i]) + tonumber(n))
  end
  add(3, a[3])
  add(4, a[4])
  add(5, a[5])
  if tonumber(a[5]) > 0 then
    add(10, 1)
  elseif a[12] == '` + contracts.LastSucceeded + `' then
    f[10] = '0'
  end
  if a[12] ~= '' and tonumber(a[6]) >= tonumber(f[6]) then f[8], f[9] = a[12], a[13] end
  if tonumber(a[6]) > tonumber(f[6]) then f[6] = a[6] end
  if tonumber(a[7]) > 0 and tonumber(a[8]) > tonumber(f[2]) then f[1], f[2] = a[7], a[8] end
  f[7] = recent
  redis.call('HSET', KEYS[5], a[1], table.concat(f, '|'))
  if a[9] ~= '' then
    put(a[9], a[10], a[11])
  end
  return 1
end
local out = {}
for i = 1, #ARGV, 13 do
  out[#out + 1] = record({unpack(ARGV, i, i + 12)})
end
return out
`)

// recordArgs is how many arguments each result takes in recordScript.
const recordArgs = 13

// RecordAll records results, those of one partition a Batch at a time in
// one script call, the calls sent in pipelines, and reports for each
// whether it was recorded now (false: it had been recorded before). On an
// error some records may have been applied; recording them again is safe.
func (ix *Index) RecordAll(ctx context.Context, records []Record) ([]bool, error) {
	calls, err := ix.partitionCalls(len(records), recordArgs, func(i int) (string, []any, error) {
		args, err := recordArgsOf(records[i])
		return records[i].JobKey, args, err
	})
	if err != nil {
		return nil, err
	}
	recorded := make([]bool, len(records))
	err = ix.runEach(ctx, recordScript, calls, func(c scriptCall, cmd *redis.Cmd) error {
		res, err := cmd.Int64Slice()
		if err != nil {
			return err
		}
		if len(res) != len(c.items) {
			return fmt.Errorf("the script answered %d results for %d", len(res), len(c.items))
		}
		for k, n := range res {
			recorded[c.items[k]] = n == 1
		}
		return nil
	})
	if err != nil {
		return recorded, fmt.Errorf("recording %d results: %w", len(records), err)
	}
	return recorded, nil
}

// Record records one result; see RecordAll.
func (ix *Index) Record(ctx context.Context, r Record) (bool, error) {
	recorded, err := ix.RecordAll(ctx, []Record{r})
	if err != nil {
		return false, err
	}
	return recorded[0], nil
}

// recordArgsOf returns the recordScript arguments of r.
func recordArgsOf(r Record) ([]any, error) {
	if r.JobKey == "" || r.AttemptID == "" || strings.Contains(r.AttemptID, "|") {
		return nil, fmt.Errorf("recording a result: job key %q or attempt id %q is empty or holds '|'", r.JobKey, r.AttemptID)
	}
	started := int64(0)
	if r.Executions != 0 && !r.Started.IsZero() {
		started = r.Started.UnixMilli()
	}
	occurrenceMs := int64(0)
	if r.Occurrence > 0 {
		occurrenceMs = r.OccurrenceTime.UnixMilli()
	}
	status, endedMs := "", int64(0)
	if r.Executions != 0 && r.Status != "" {
		if !slices.Contains(contracts.LastStatuses, r.Status) {
			return nil, fmt.Errorf("recording a result: status %q is not one of %v", r.Status, contracts.LastStatuses)
		}
		status = r.Status
		if !r.Ended.IsZero() {
			endedMs = r.Ended.UnixMilli()
		}
	}
	args := []any{jobID(r.JobKey), attemptTag(r.AttemptID), r.Executions, r.Failures, r.Faulted,
		started, max(r.Occurrence, 0), occurrenceMs, "", "", "", status, endedMs}
	if n := r.Next; n != nil {
		if err := n.validate(); err != nil {
			return nil, fmt.Errorf("recording a result: next entry %s: %w", n.name(), err)
		}
		if n.JobKey != r.JobKey {
			return nil, fmt.Errorf("recording a result: the next entry belongs to another job, %q", n.JobKey)
		}
		args[8], args[9], args[10] = entryID(n.JobKey, n.Slot), n.Due.UnixMilli(), n.pack()
	}
	return args, nil
}

// Statuses returns the tallies of the jobs in one pipeline; found[i] tells
// whether the job has a status (it has run since Redis was last emptied, or
// it was restored).
func (ix *Index) Statuses(ctx context.Context, jobKeys []string) (tallies []contracts.Tally, found []bool, err error) {
	cmds := make([]*redis.StringCmd, len(jobKeys))
	_, err = ix.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, k := range jobKeys {
			cmds[i] = pipe.HGet(ctx, ix.keysOf(k)[keyStatus], jobID(k))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("reading %d statuses: %w", len(jobKeys), err)
	}
	tallies, found = make([]contracts.Tally, len(jobKeys)), make([]bool, len(jobKeys))
	for i, c := range cmds {
		v, err := c.Result()
		if err != nil {
			continue // absent (redis.Nil); a broken connection failed the pipeline above
		}
		if t, ok := unpackStatus(v); ok {
			tallies[i], found[i] = t, true
		}
	}
	return tallies, found, nil
}

// RestoreStatuses writes the tallies of jobs that have no status, in
// pipelines: after Redis lost its state, the planner restores what history
// knows. A status the planners keep already is never overwritten.
func (ix *Index) RestoreStatuses(ctx context.Context, tallies map[string]contracts.Tally) error {
	keys := make([]string, 0, len(tallies))
	for k := range tallies {
		keys = append(keys, k)
	}
	for chunk := range slices.Chunk(keys, 1000) {
		_, err := ix.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, k := range chunk {
				pipe.HSetNX(ctx, ix.keysOf(k)[keyStatus], jobID(k), packStatus(tallies[k]))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("restoring %d statuses: %w", len(tallies), err)
		}
	}
	return nil
}

// packStatus returns the stored form of a tally, with its recent attempts
// when they can be stored (whole tags, none holding '|').
func packStatus(t contracts.Tally) string {
	ms := func(at time.Time) int64 {
		if at.IsZero() {
			return 0
		}
		return at.UnixMilli()
	}
	recent := t.Recent
	if len(recent)%tagLen != 0 || len(recent) > tagLen*recentTags || strings.Contains(recent, "|") {
		recent = ""
	}
	status, statusTime := t.LastStatus, t.LastStatusTime
	if !slices.Contains(contracts.LastStatuses, status) {
		status, statusTime = "", time.Time{}
	}
	return fmt.Sprintf("%d|%d|%d|%d|%d|%d|%s|%s|%d|%d", t.Occurrence, ms(t.OccurrenceTime), t.Executions, t.Failures, t.Faulted,
		ms(t.LastExecution), recent, status, ms(statusTime), max(t.ConsecutiveFaults, 0))
}

// unpackStatus reads a stored status.
func unpackStatus(v string) (contracts.Tally, bool) {
	f := strings.Split(v, "|")
	switch len(f) {
	case statusFields:
	case oldStatusFields:
		f = append(f, "", "0", "0")
	case faultsStatusFields:
		f = append(f, "0")
	default:
		return contracts.Tally{}, false
	}
	var p intParser
	t := contracts.Tally{
		Occurrence:     p.int(f[0], "occurrence"),
		OccurrenceTime: msTime(p.int(f[1], "occurrence time")),
		Executions:     p.int(f[2], "executions"),
		Failures:       p.int(f[3], "failures"),
		Faulted:        p.int(f[4], "faulted"),
		LastExecution:  msTime(p.int(f[5], "last execution")),
		Recent:         f[6],
		LastStatus:     f[7],
		LastStatusTime: msTime(p.int(f[8], "last status time")),

		ConsecutiveFaults: p.int(f[9], "consecutive faults"),
	}
	return t, p.err == nil
}

// msTime returns the time of unix ms, the zero time for 0.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
