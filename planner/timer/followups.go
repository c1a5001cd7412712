package timer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// scheduleMissingScript stores entries as pending where their id holds no
// entry, pending or claimed; an entry there already is left as it is.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[3i-2] entry id, ARGV[3i-1] due (unix ms), ARGV[3i] packed entry,
//	           for i = 1 .. Batch
//
// Returns the number of entries stored.
var scheduleMissingScript = redis.NewScript(luaLib + `
local n = 0
for i = 1, #ARGV, 3 do
  if redis.call('HEXISTS', KEYS[3], ARGV[i]) == 0 then
    put(ARGV[i], ARGV[i + 1], ARGV[i + 2])
    n = n + 1
  end
end
return n
`)

// ScheduleMissing stores each entry whose (JobKey, Slot) holds none, as
// Schedule does, and leaves alone the entries there already: a newer
// attempt written meanwhile wins over the one being restored.
func (ix *Index) ScheduleMissing(ctx context.Context, entries []Entry) error {
	calls, err := ix.entryCalls(entries)
	if err == nil {
		err = ix.runAll(ctx, scheduleMissingScript, calls)
	}
	if err != nil {
		return fmt.Errorf("restoring %d entries: %w", len(entries), err)
	}
	return nil
}

// FollowUps returns, for each job, the entries it holds beside its
// schedule (retries, error actions, runs), pending or claimed, in two
// round trips.
func (ix *Index) FollowUps(ctx context.Context, jobKeys []string) ([][]Entry, error) {
	lists := make([]*redis.StringCmd, len(jobKeys))
	_, err := ix.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, k := range jobKeys {
			lists[i] = pipe.HGet(ctx, ix.keysOf(k)[keySlots], jobID(k))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("reading the slots of %d jobs: %w", len(jobKeys), err)
	}
	type ref struct {
		job       int
		key, slot string
		value     *redis.StringCmd
		score     *redis.FloatCmd
	}
	var refs []ref
	for i, c := range lists {
		list, err := c.Result()
		if err != nil {
			continue // no slots (redis.Nil)
		}
		for _, slot := range strings.Split(strings.TrimSuffix(list, "|"), "|") {
			if slot != "" {
				refs = append(refs, ref{job: i, key: jobKeys[i], slot: slot})
			}
		}
	}
	out := make([][]Entry, len(jobKeys))
	if len(refs) == 0 {
		return out, nil
	}
	_, err = ix.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := range refs {
			keys, id := ix.keysOf(refs[i].key), entryID(refs[i].key, refs[i].slot)
			refs[i].value = pipe.HGet(ctx, keys[keyState], id)
			refs[i].score = pipe.ZScore(ctx, keys[keyDue], id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("reading the follow-ups of %d jobs: %w", len(jobKeys), err)
	}
	for _, r := range refs {
		v, err := r.value.Result()
		if err != nil {
			continue
		}
		due, dueErr := r.score.Result()
		if e, _, err := unpack(v, int64(due), dueErr == nil); err == nil {
			out[r.job] = append(out[r.job], e)
		}
	}
	return out, nil
}
