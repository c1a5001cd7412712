package timer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// tokenLen is the length of a claim token: 16 base32 characters, 80 random
// bits, so tokens of different claims never match, even across a flush of
// Redis.
const tokenLen = 16

// newToken returns a fresh claim token. Each script call gets its own, so an
// entry claimed twice (released or rescheduled in between) never carries
// the same token twice.
func newToken() string { return rand.Text()[:tokenLen] }

// claimScript claims the earliest due entries of a partition: it moves them
// from the due set to the in-flight set with the lease expiry as score, and
// writes the claim token and the due time into them. An id without a
// readable entry is dropped.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[1]    now (unix ms): entries due at or before it are claimed
//	ARGV[2]    lease expiry (unix ms)
//	ARGV[3]    the most entries to claim
//	ARGV[4]    claim token
//
// Returns {examined, packed entry...}: the number of due ids looked at,
// then each claimed entry with its token and due time, earliest first.
// Each Redis command takes every entry of the call at once.
var claimScript = redis.NewScript(luaLib + `
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3], 'WITHSCORES')
local n = #due / 2
local out = {n}
if n == 0 then return out end
local ids = {}
for i = 1, n do ids[i] = due[2 * i - 1] end
local values = redis.call('HMGET', KEYS[3], unpack(ids))
local states, leases = {}, {}
for i = 1, n do
  local id, v, rest = ids[i], values[i], nil
  if v then
    rest = select(3, parse(v))
  end
  if rest then
    v = ARGV[4] .. '|' .. string.format('%.0f', tonumber(due[2 * i])) .. '|' .. rest
    states[#states + 1], states[#states + 2] = id, v
    leases[#leases + 1], leases[#leases + 2] = ARGV[2], id
    out[#out + 1] = v
  else
    drop(id)
    remove_slot(id)
  end
end
redis.call('ZREM', KEYS[1], unpack(ids))
if #states > 0 then
  redis.call('HSET', KEYS[3], unpack(states))
  redis.call('ZADD', KEYS[2], unpack(leases))
end
return out
`)

// Claim claims up to most entries due at or before now, each for lease:
// until now+lease no other Claim returns it, and afterwards Reclaim makes it
// due again. However many planners claim at once, each due entry goes to
// exactly one of them.
//
// Claim spreads what it asks for over the partitions, starting at a
// rotating one, at most Config.Batch entries per Lua call, and sends the
// calls of all partitions in one pipeline: thousands of claims take a few
// round trips. A partition whose call examined fewer entries than asked is
// not asked again. The claims come ordered by due time (within a partition,
// due order is claim order). The entries are in flight from the moment they
// are claimed, so Claim returns the claims it made even together with an
// error; they must be committed or released, or they come back after the
// lease.
func (ix *Index) Claim(ctx context.Context, now time.Time, lease time.Duration, most int) ([]Claim, error) {
	if lease < time.Millisecond {
		return nil, fmt.Errorf("claiming due entries: lease %v is shorter than a millisecond", lease)
	}
	var claims []Claim
	nowMs, expiry := now.UnixMilli(), now.Add(lease).UnixMilli()
	n := len(ix.parts)
	start := int(ix.rotor.Add(1) % uint32(n))
	// active are the partitions that may hold more due entries.
	active := make([]int, n)
	for i := range active {
		active[i] = (start + i) % n
	}
	type call struct {
		part, limit int
		token       string
		cmd         *redis.Cmd
	}
	var errs []error
	for len(active) > 0 && len(claims) < most && len(errs) == 0 {
		remaining := most - len(claims)
		per := min(ix.cfg.Batch, max(1, remaining/len(active)))
		pipe := ix.rdb.Pipeline()
		var calls []call
		for _, p := range active {
			if remaining == 0 {
				break
			}
			c := call{part: p, limit: min(per, remaining), token: newToken()}
			remaining -= c.limit
			c.cmd = claimScript.EvalSha(ctx, pipe, ix.parts[p], nowMs, expiry, c.limit, c.token)
			calls = append(calls, c)
		}
		_, _ = pipe.Exec(ctx) // each command's error is checked below
		// The partitions not asked this time stay active, followed by
		// those that may hold more.
		active = slices.Clone(active[len(calls):])
		for _, c := range calls {
			res, err := c.cmd.Slice()
			if isNoScript(err) {
				// It did not run: run it again with EVAL.
				res, err = claimScript.Run(ctx, ix.rdb, ix.parts[c.part], nowMs, expiry, c.limit, c.token).Slice()
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			examined, values, err := scriptResult(res)
			for _, v := range values {
				e, _, perr := unpack(v, 0, false)
				if perr != nil {
					err = errors.Join(err, perr)
					continue
				}
				claims = append(claims, Claim{Entry: e, Token: c.token})
			}
			if err != nil {
				errs = append(errs, err)
			}
			if examined == c.limit {
				active = append(active, c.part)
			}
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
		}
	}
	slices.SortStableFunc(claims, func(a, b Claim) int { return a.Due.Compare(b.Due) })
	if err := errors.Join(errs...); err != nil {
		return claims, fmt.Errorf("claiming due entries: %w", err)
	}
	return claims, nil
}

// batches calls move with a limit of at most Config.Batch until a call
// examines fewer entries than its limit, up to total entries in all (no
// bound when total is negative).
func (ix *Index) batches(ctx context.Context, total int, move func(limit int) (int, error)) error {
	for total != 0 {
		limit := ix.cfg.Batch
		if total > 0 {
			limit = min(limit, total)
		}
		n, err := move(limit)
		if err != nil || n < limit {
			return err
		}
		if total > 0 {
			total -= n
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// scriptResult reads {count, string...} as a script returns it.
func scriptResult(res []any) (int, []string, error) {
	if len(res) == 0 {
		return 0, nil, errors.New("empty script result")
	}
	n, ok := res[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("script result starts with %T, not a count", res[0])
	}
	values := make([]string, 0, len(res)-1)
	for _, r := range res[1:] {
		s, ok := r.(string)
		if !ok {
			return 0, nil, fmt.Errorf("script result holds %T, not a packed entry", r)
		}
		values = append(values, s)
	}
	return int(n), values, nil
}

// commitScript ends claims of one partition: each entry that still carries
// its claim token leaves the in-flight set and is replaced by the next entry
// (in the same slot or another of the same job), or deleted when there is
// none. A claim of the job's schedule advances the job's status to its
// occurrence. It takes the claims in groups of commitArgs arguments:
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[i]    claimed entry id
//	ARGV[i+1]  claim token
//	ARGV[i+2]  next entry id, "" for none
//	ARGV[i+3]  next due (unix ms)
//	ARGV[i+4]  next packed entry
//	ARGV[i+5]  the claimed occurrence number, "" when not of the schedule
//	ARGV[i+6]  its expected time (unix ms)
//
// The claims are taken one after the other, as separate calls would take
// them, but on tables of the entries and statuses read with one HMGET each;
// what changed is written at the end with one command per key (a slot list
// alone is read and written as it goes). Returns how many were committed;
// the others were no longer current.
var commitScript = redis.NewScript(luaLib + `
local ids, jobs = {}, {}
for i = 1, #ARGV, 7 do
  ids[#ids + 1] = ARGV[i]
  if ARGV[i + 5] ~= '' then jobs[#jobs + 1] = string.sub(ARGV[i], 1, JOB_ID_LEN) end
end
-- state and status hold what the entries and statuses are as the claims
-- are taken: a value, or false when absent.
local state, status = {}, {}
local values = redis.call('HMGET', KEYS[3], unpack(ids))
for k, id in ipairs(ids) do
  if state[id] == nil then state[id] = values[k] end
end
if #jobs > 0 then
  values = redis.call('HMGET', KEYS[5], unpack(jobs))
  for k, job in ipairs(jobs) do
    if status[job] == nil then status[job] = values[k] end
  end
end
-- due is each touched entry's due score, false once deleted; written lists
-- the touched entries and jobs_advanced the advanced jobs, in order.
local due, written, jobs_advanced, changed = {}, {}, {}, {}
local function touch(id)
  if due[id] == nil then written[#written + 1] = id end
end
local n = 0
for i = 1, #ARGV, 7 do
  local id, next = ARGV[i], ARGV[i + 2]
  if claim_of(state[id], ARGV[i + 1]) then
    if next ~= id then
      touch(id)
      state[id], due[id] = false, false
      remove_slot(id)
    end
    if next ~= '' then
      touch(next)
      state[next], due[next] = ARGV[i + 4], ARGV[i + 3]
      add_slot(next)
    end
    if ARGV[i + 5] ~= '' then
      local job = string.sub(id, 1, JOB_ID_LEN)
      local s = advanced(status[job], ARGV[i + 5], ARGV[i + 6])
      if s then
        status[job] = s
        if not changed[job] then
          changed[job] = true
          jobs_advanced[#jobs_advanced + 1] = job
        end
      end
    end
    n = n + 1
  end
end
if #written == 0 then return n end
local sets, dels, adds = {}, {}, {}
for _, id in ipairs(written) do
  if state[id] then
    sets[#sets + 1], sets[#sets + 2] = id, state[id]
    adds[#adds + 1], adds[#adds + 2] = due[id], id
  else
    dels[#dels + 1] = id
  end
end
redis.call('ZREM', KEYS[2], unpack(written))
if #dels > 0 then
  redis.call('ZREM', KEYS[1], unpack(dels))
  redis.call('HDEL', KEYS[3], unpack(dels))
end
if #sets > 0 then
  redis.call('HSET', KEYS[3], unpack(sets))
  redis.call('ZADD', KEYS[1], unpack(adds))
end
if #jobs_advanced > 0 then
  local fields = {}
  for _, job in ipairs(jobs_advanced) do
    fields[#fields + 1], fields[#fields + 2] = job, status[job]
  end
  redis.call('HSET', KEYS[5], unpack(fields))
end
return n
`)

// commitArgs is how many arguments each claim takes in commitScript.
const commitArgs = 7

// Commit ends claim c after its execution was published: it stores next (an
// entry of the same job, in c's slot or another, replacing what is there as
// Schedule does) or, when next is nil, deletes c's entry. When the entry no longer carries c's token (it was
// rescheduled, removed, or reclaimed and claimed again since, or c was
// committed already) Commit does nothing and returns nil: the newer state
// stays.
func (ix *Index) Commit(ctx context.Context, c Claim, next *Entry) error {
	args, err := commitArgsOf(c, next)
	if err == nil {
		err = ix.runAll(ctx, commitScript, []scriptCall{{keys: ix.keysOf(c.JobKey), args: args}})
	}
	if err != nil {
		return fmt.Errorf("committing %s: %w", c.name(), err)
	}
	return nil
}

// Completion is a claim and the entry that follows it, for CommitAll.
type Completion struct {
	Claim Claim
	// Next is the entry to store in place of the claimed one; nil deletes it.
	Next *Entry
}

// CommitAll commits many claims, as Commit does one: a planner that
// published a batch of executions commits the batch in a few calls of
// Batch claims each, sent in pipelines. It checks every completion before
// committing any; on a Redis error some may be committed and others not,
// and calling it again is safe.
func (ix *Index) CommitAll(ctx context.Context, completions []Completion) error {
	calls, err := ix.partitionCalls(len(completions), commitArgs, func(i int) (string, []any, error) {
		d := completions[i]
		args, err := commitArgsOf(d.Claim, d.Next)
		if err != nil {
			return "", nil, fmt.Errorf("committing %s: %w", d.Claim.name(), err)
		}
		return d.Claim.JobKey, args, nil
	})
	if err != nil {
		return err
	}
	if err := ix.runAll(ctx, commitScript, calls); err != nil {
		return fmt.Errorf("committing %d claims: %w", len(completions), err)
	}
	return nil
}

// commitArgsOf returns the commitScript arguments that commit c with next.
func commitArgsOf(c Claim, next *Entry) ([]any, error) {
	if c.Token == "" {
		return nil, errNoToken
	}
	args := []any{entryID(c.JobKey, c.Slot), c.Token, "", "", "", "", ""}
	if c.Slot == "" && c.Occurrence > 0 {
		args[5], args[6] = c.Occurrence, c.Expected.UnixMilli()
	}
	if next != nil {
		if err := next.validate(); err != nil {
			return nil, fmt.Errorf("next entry: %w", err)
		}
		if next.JobKey != c.JobKey {
			return nil, fmt.Errorf("the next entry belongs to another job, %q", next.JobKey)
		}
		args[2], args[3], args[4] = entryID(next.JobKey, next.Slot), next.Due.UnixMilli(), next.pack()
	}
	return args, nil
}

var errNoToken = errors.New("the claim has no token")

// releaseScript gives a claimed entry back as due at its original due time,
// when it still carries the claim token.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[1]    entry id
//	ARGV[2]    claim token
//
// Returns 1 when released, 0 when the claim was no longer current.
var releaseScript = redis.NewScript(luaLib + `
local due, rest = claimed(ARGV[1], ARGV[2])
if not due then return 0 end
put(ARGV[1], due, pending(rest))
return 1
`)

// Release gives claim c back after publishing failed: the entry is due again
// at once, at its original Due, for any planner to claim. Like Commit it does
// nothing when the claim is no longer current.
func (ix *Index) Release(ctx context.Context, c Claim) error {
	err := errNoToken
	if c.Token != "" {
		err = releaseScript.Run(ctx, ix.rdb, ix.keysOf(c.JobKey), entryID(c.JobKey, c.Slot), c.Token).Err()
	}
	if err != nil {
		return fmt.Errorf("releasing %s: %w", c.name(), err)
	}
	return nil
}

// reclaimScript makes in-flight entries whose lease expired due again at
// their original due time, without a token. An id without a readable entry is
// dropped.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[1]    now (unix ms): leases expiring at or before it have expired
//	ARGV[2]    the most entries to reclaim
//
// Returns {examined}: the number of expired ids looked at.
var reclaimScript = redis.NewScript(luaLib + `
local ids = redis.call('ZRANGE', KEYS[2], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[2])
for _, id in ipairs(ids) do
  local v = redis.call('HGET', KEYS[3], id)
  local _, due, rest
  if v then
    _, due, rest = parse(v)
  end
  if due and due ~= '' then
    put(id, due, pending(rest))
  else
    drop(id)
    remove_slot(id)
  end
end
return {#ids}
`)

// Reclaim makes every claimed entry whose lease expired at or before now due
// again at its original Due, and returns how many it looked at (an unreadable
// entry it finds is deleted, and counted). The planner that held such a claim
// can no longer commit or release it.
func (ix *Index) Reclaim(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for _, keys := range ix.parts {
		err := ix.batches(ctx, -1, func(limit int) (int, error) {
			res, err := reclaimScript.Run(ctx, ix.rdb, keys, now.UnixMilli(), limit).Slice()
			if err != nil {
				return 0, err
			}
			n, _, err := scriptResult(res)
			total += n
			return n, err
		})
		if err != nil {
			return total, fmt.Errorf("reclaiming expired claims: %w", err)
		}
	}
	return total, nil
}
