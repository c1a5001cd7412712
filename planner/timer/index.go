package timer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Index is the Redis index of due occurrences. Any number of Index values,
// in one process or many, may share one Redis and one Config; each is safe
// for concurrent use.
type Index struct {
	rdb   Client
	cfg   Config
	parts []partitionKeys
	// rotor picks the partition a Claim starts at; it starts at random so
	// that planners spread over the partitions.
	rotor atomic.Uint32
}

// Client is the part of a Redis client the Index uses: scripts, pipelines
// and two plain commands. Every redis.UniversalClient (a client of one
// server, of a Sentinel group or of a Redis Cluster) is one.
//
// The Index holds this rather than a redis.UniversalClient because a call
// through that interface, with its hundreds of commands, has the compiler
// generate go-redis's whole client method set again in every package that
// makes one, and in every package that uses the Index.
type Client interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	TxPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd
	Exists(ctx context.Context, keys ...string) *redis.IntCmd
}

// New returns an Index over rdb, which may be a client of one server, of a
// Sentinel group or of a Redis Cluster.
func New(rdb Client, cfg Config) (*Index, error) {
	if rdb == nil {
		return nil, errors.New("creating the timer index: the Redis client is nil")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("creating the timer index: %w", err)
	}
	ix := &Index{rdb: rdb, cfg: cfg, parts: make([]partitionKeys, cfg.Partitions)}
	for p := range ix.parts {
		ix.parts[p] = newPartitionKeys(cfg.Prefix, p)
	}
	ix.rotor.Store(rand.Uint32())
	return ix, nil
}

// keysOf returns the partition keys of jobKey's entries.
func (ix *Index) keysOf(jobKey string) partitionKeys {
	return ix.parts[partitionOf(jobKey, ix.cfg.Partitions)]
}

// scheduleScript stores entries as pending, replacing any entry with the
// same id, pending or claimed (the claim's token goes, so its Commit will do
// nothing).
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[3i-2] entry id, ARGV[3i-1] due (unix ms), ARGV[3i] packed entry,
//	           for i = 1 .. Batch
//
// Returns the number of entries stored.
var scheduleScript = redis.NewScript(luaLib + `
for i = 1, #ARGV, 3 do
  put(ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
return #ARGV / 3
`)

// Schedule stores e as the pending entry (e.JobKey, e.Slot), due at e.Due.
// It replaces the entry there, even one claimed right now: the claim's later
// Commit or Release then does nothing, and e is what stays.
func (ix *Index) Schedule(ctx context.Context, e Entry) error {
	if err := ix.schedule(ctx, []Entry{e}); err != nil {
		return fmt.Errorf("scheduling %s: %w", e.name(), err)
	}
	return nil
}

// ScheduleAll is Schedule for many entries, in bounded batches sent in
// pipelines: the way to rebuild the index. On an error some entries may be
// stored and others not; calling it again with the same entries is safe.
func (ix *Index) ScheduleAll(ctx context.Context, entries []Entry) error {
	if err := ix.schedule(ctx, entries); err != nil {
		return fmt.Errorf("scheduling %d entries: %w", len(entries), err)
	}
	return nil
}

func (ix *Index) schedule(ctx context.Context, entries []Entry) error {
	calls, err := ix.entryCalls(entries)
	if err != nil {
		return err
	}
	return ix.runAll(ctx, scheduleScript, calls)
}

// entryCalls groups entries by partition into the calls of a script that
// takes (id, due, packed entry) triples, at most Batch entries a call.
func (ix *Index) entryCalls(entries []Entry) ([]scriptCall, error) {
	return ix.partitionCalls(len(entries), 3, func(i int) (string, []any, error) {
		e := entries[i]
		if err := e.validate(); err != nil {
			return "", nil, fmt.Errorf("entry %s: %w", e.name(), err)
		}
		return e.JobKey, []any{entryID(e.JobKey, e.Slot), e.Due.UnixMilli(), e.pack()}, nil
	})
}

// partitionCalls groups n items by the partition of their job into the
// calls of a script that takes each item's width arguments one after the
// other, at most Batch items a call. item returns the job and the
// arguments of item i; its error stops the grouping.
func (ix *Index) partitionCalls(n, width int, item func(i int) (jobKey string, args []any, err error)) ([]scriptCall, error) {
	args := make([][]any, ix.cfg.Partitions)
	items := make([][]int, ix.cfg.Partitions)
	for i := range n {
		jobKey, a, err := item(i)
		if err != nil {
			return nil, err
		}
		p := partitionOf(jobKey, ix.cfg.Partitions)
		args[p] = append(args[p], a...)
		items[p] = append(items[p], i)
	}
	var calls []scriptCall
	for p := range args {
		for k := 0; k < len(items[p]); k += ix.cfg.Batch {
			end := min(k+ix.cfg.Batch, len(items[p]))
			calls = append(calls, scriptCall{keys: ix.parts[p], args: args[p][k*width : end*width], items: items[p][k:end]})
		}
	}
	return calls, nil
}

// removeScript deletes entries of one partition, pending or claimed.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[1...] entry ids
//
// Returns how many of the entries existed.
var removeScript = redis.NewScript(luaLib + `
local n = 0
for _, id in ipairs(ARGV) do
  remove_slot(id)
  n = n + drop(id)
end
return n
`)

// Remove deletes the entry (jobKey, slot), pending or claimed; a claim on it
// then commits nothing. Removing an absent entry is not an error.
func (ix *Index) Remove(ctx context.Context, jobKey, slot string) error {
	err := removeScript.Run(ctx, ix.rdb, ix.keysOf(jobKey), entryID(jobKey, slot)).Err()
	if err != nil {
		return fmt.Errorf("removing %s: %w", entryName(jobKey, slot), err)
	}
	return nil
}

// RemoveAll is Remove for many jobs' entries in one slot: those of one
// partition a Batch at a time in one script call, the calls sent in
// pipelines.
func (ix *Index) RemoveAll(ctx context.Context, jobKeys []string, slot string) error {
	calls, err := ix.partitionCalls(len(jobKeys), 1, func(i int) (string, []any, error) {
		return jobKeys[i], []any{entryID(jobKeys[i], slot)}, nil
	})
	if err == nil {
		err = ix.runAll(ctx, removeScript, calls)
	}
	if err != nil {
		return fmt.Errorf("removing %d entries: %w", len(jobKeys), err)
	}
	return nil
}

// removeJobScript deletes every entry of one job, its schedule and each slot
// in its slot list, and its status.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[1]    job id
//
// Returns the number of entries deleted.
var removeJobScript = redis.NewScript(luaLib + `
redis.call('HDEL', KEYS[5], ARGV[1])
local n = drop(ARGV[1])
local list = redis.call('HGET', KEYS[4], ARGV[1])
if list then
  for slot in string.gmatch(list, '([^|]*)|') do
    n = n + drop(ARGV[1] .. slot)
  end
  redis.call('HDEL', KEYS[4], ARGV[1])
end
return n
`)

// RemoveJob deletes every entry of the job, in every slot, pending or
// claimed, its status and its running mark: the job is gone.
func (ix *Index) RemoveJob(ctx context.Context, jobKey string) error {
	if err := removeJobScript.Run(ctx, ix.rdb, ix.keysOf(jobKey), jobID(jobKey)).Err(); err != nil {
		return fmt.Errorf("removing the entries of %q: %w", jobKey, err)
	}
	// And its running mark: a job created again under the name starts
	// with nothing in flight.
	if _, err := ix.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, ix.runningKey(jobKey)).Err() }); err != nil {
		return fmt.Errorf("removing the running mark of %q: %w", jobKey, err)
	}
	return nil
}

// Get returns the entry (jobKey, slot), pending or claimed, and false when
// there is none.
func (ix *Index) Get(ctx context.Context, jobKey, slot string) (Entry, bool, error) {
	e, ok, err := ix.get(ctx, jobKey, slot)
	if err != nil {
		return Entry{}, false, fmt.Errorf("getting %s: %w", entryName(jobKey, slot), err)
	}
	return e, ok, nil
}

func (ix *Index) get(ctx context.Context, jobKey, slot string) (Entry, bool, error) {
	keys, id := ix.keysOf(jobKey), entryID(jobKey, slot)
	var value *redis.StringCmd
	var score *redis.FloatCmd
	// MULTI, so that the value and the score are of the same moment
	_, err := ix.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		value = pipe.HGet(ctx, keys[keyState], id)
		score = pipe.ZScore(ctx, keys[keyDue], id)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Entry{}, false, err
	}
	v, err := value.Result()
	if errors.Is(err, redis.Nil) {
		return Entry{}, false, nil
	} else if err != nil {
		return Entry{}, false, err
	}
	due, dueErr := score.Result()
	e, _, err := unpack(v, int64(due), dueErr == nil)
	return e, err == nil, err
}

// GetAll returns the entries (jobKeys[i], slot) in one pipeline; found[i]
// tells whether each exists. Unlike Get, an entry's value and score are not
// read in one transaction: it serves rebuilds, which compare revisions.
func (ix *Index) GetAll(ctx context.Context, jobKeys []string, slot string) (entries []Entry, found []bool, err error) {
	values := make([]*redis.StringCmd, len(jobKeys))
	scores := make([]*redis.FloatCmd, len(jobKeys))
	_, err = ix.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, jobKey := range jobKeys {
			keys, id := ix.keysOf(jobKey), entryID(jobKey, slot)
			values[i] = pipe.HGet(ctx, keys[keyState], id)
			scores[i] = pipe.ZScore(ctx, keys[keyDue], id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("getting %d entries: %w", len(jobKeys), err)
	}
	entries, found = make([]Entry, len(jobKeys)), make([]bool, len(jobKeys))
	for i := range jobKeys {
		v, err := values[i].Result()
		if err != nil {
			continue // absent (redis.Nil); a broken connection failed the pipeline above
		}
		due, dueErr := scores[i].Result()
		if e, _, err := unpack(v, int64(due), dueErr == nil); err == nil {
			entries[i], found[i] = e, true
		}
	}
	return entries, found, nil
}

// Len returns the number of entries, pending and claimed.
func (ix *Index) Len(ctx context.Context) (int64, error) {
	cmds, err := pipelinePartitions(ctx, ix, func(pipe redis.Pipeliner, k partitionKeys) *redis.IntCmd {
		return pipe.HLen(ctx, k[keyState])
	})
	if err != nil {
		return 0, fmt.Errorf("counting entries: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// Backlog returns how many pending entries are due at or before now, and
// how many entries are claimed (being dispatched, or left by a planner that
// stopped until their lease expires).
func (ix *Index) Backlog(ctx context.Context, now time.Time) (due, claimed int64, err error) {
	max := strconv.FormatInt(now.UnixMilli(), 10)
	type counts struct{ due, claimed *redis.IntCmd }
	pipe := ix.rdb.Pipeline()
	cmds := make([]counts, len(ix.parts))
	for p, k := range ix.parts {
		cmds[p] = counts{pipe.ZCount(ctx, k[keyDue], "-inf", max), pipe.ZCard(ctx, k[keyInflight])}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, fmt.Errorf("counting due and claimed entries: %w", err)
	}
	for _, c := range cmds {
		due += c.due.Val()
		claimed += c.claimed.Val()
	}
	return due, claimed, nil
}

// Earliest returns the earliest due time of the pending entries, and false
// when there is none. Claimed entries do not count.
func (ix *Index) Earliest(ctx context.Context) (time.Time, bool, error) {
	cmds, err := pipelinePartitions(ctx, ix, func(pipe redis.Pipeliner, k partitionKeys) *redis.ZSliceCmd {
		return pipe.ZRangeWithScores(ctx, k[keyDue], 0, 0)
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("finding the earliest due time: %w", err)
	}
	var earliest int64
	found := false
	for _, c := range cmds {
		for _, z := range c.Val() {
			if ms := int64(z.Score); !found || ms < earliest {
				earliest, found = ms, true
			}
		}
	}
	if !found {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(earliest).UTC(), true, nil
}

// pipelinePartitions sends one command per partition in one pipeline and
// returns the commands in partition order.
func pipelinePartitions[C redis.Cmder](ctx context.Context, ix *Index, cmd func(redis.Pipeliner, partitionKeys) C) ([]C, error) {
	pipe := ix.rdb.Pipeline()
	cmds := make([]C, len(ix.parts))
	for p, k := range ix.parts {
		cmds[p] = cmd(pipe, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	return cmds, nil
}

// scriptCall is one run of a partition script.
type scriptCall struct {
	keys partitionKeys
	args []any
	// items are the indexes of the items whose arguments the call
	// takes, in order (partitionCalls fills it).
	items []int
}

// pipelineDepth is the most script calls runAll sends in one pipeline.
const pipelineDepth = 64

// runAll runs script once per call: a single call directly, more in
// pipelines of EVALSHA. Calls the server answers with NOSCRIPT (its script
// cache was emptied) run again with EVAL, so the script must be safe to
// repeat after it did not run.
func (ix *Index) runAll(ctx context.Context, script *redis.Script, calls []scriptCall) error {
	return ix.runEach(ctx, script, calls, nil)
}

// runEach is runAll handing each call's answer to read, when set, in the
// order of calls; read's error stops it.
func (ix *Index) runEach(ctx context.Context, script *redis.Script, calls []scriptCall, read func(scriptCall, *redis.Cmd) error) error {
	if len(calls) == 1 {
		cmd := script.Run(ctx, ix.rdb, calls[0].keys, calls[0].args...)
		if err := cmd.Err(); err != nil || read == nil {
			return err
		}
		return read(calls[0], cmd)
	}
	for group := range slices.Chunk(calls, pipelineDepth) {
		pipe := ix.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(group))
		for i, c := range group {
			cmds[i] = script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
		_, _ = pipe.Exec(ctx) // each command's error is checked below
		for i, cmd := range cmds {
			if isNoScript(cmd.Err()) {
				cmd = script.Run(ctx, ix.rdb, group[i].keys, group[i].args...)
			}
			if err := cmd.Err(); err != nil {
				return err
			}
			if read != nil {
				if err := read(group[i], cmd); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func isNoScript(err error) bool {
	return errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")
}
