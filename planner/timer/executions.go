package timer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
)

// Executions per minute are counted beside the partitions, one hash a
// minute:
//
//	<prefix>:executions:<minute>  HASH  "<collection tokens>|s" -> attempts that succeeded
//	                                    "<collection tokens>|f" -> attempts that failed
//
// where minute is the UTC minute the attempts ended in, written
// 2006-01-02T15:04, and the collection tokens are contracts.CollectionRef
// Tokens ("sub.rg.collection", folded to lower case). Each key expires
// executionsKept after its minute began.
//
// Unlike a partition's keys these carry no hash tag: every command touches
// one minute's key alone, so under Redis Cluster the minutes may spread
// over the nodes, and a pipeline sends each command to its node.
//
// The counts are a statistic, not state: they are not rebuilt after Redis
// lost them, and an attempt whose result was recorded in its job's status
// but not counted here (the planner stopped between the two) is missing.
const executionsKept = 25 * time.Hour

// Outcome suffixes of the fields of an executions hash.
const (
	succeededSuffix = "|s"
	failedSuffix    = "|f"
)

// executionsKey returns the key of the executions that ended in minute.
func executionsKey(prefix string, minute time.Time) string {
	return prefix + ":executions:" + minute.UTC().Format("2006-01-02T15:04")
}

// executionsField returns the field counting a collection's attempts that
// succeeded or failed.
func executionsField(c contracts.CollectionRef, failed bool) string {
	if failed {
		return c.Tokens() + failedSuffix
	}
	return c.Tokens() + succeededSuffix
}

// Execution is one attempt of an action, of a job's main action or of its
// error action, counted in the minute it ended.
type Execution struct {
	// Collection is the collection of the attempt's job.
	Collection contracts.CollectionRef
	// Failed tells that the attempt failed; else it succeeded.
	Failed bool
	// Ended is when the attempt ended; it is counted in that UTC minute.
	// An execution without it is not counted.
	Ended time.Time
}

// CountExecutions adds the executions to their minutes, in one pipeline,
// and makes each minute expire 25 hours after it began. Counting is not
// idempotent: the caller counts each attempt once, when RecordAll reports
// its result recorded for the first time.
func (ix *Index) CountExecutions(ctx context.Context, executions []Execution) error {
	type counter struct{ key, field string }
	counts := map[counter]int64{}
	expiries := map[string]time.Time{}
	for _, e := range executions {
		if e.Ended.IsZero() {
			continue
		}
		minute := e.Ended.UTC().Truncate(time.Minute)
		key := executionsKey(ix.cfg.Prefix, minute)
		counts[counter{key, executionsField(e.Collection, e.Failed)}]++
		expiries[key] = minute.Add(executionsKept)
	}
	if len(counts) == 0 {
		return nil
	}
	pipe := ix.rdb.Pipeline()
	for c, n := range counts {
		pipe.HIncrBy(ctx, c.key, c.field, n)
	}
	for key, at := range expiries {
		pipe.ExpireAt(ctx, key, at)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("counting %d executions: %w", len(executions), err)
	}
	return nil
}

// MinuteExecutions are the attempts that ended in one minute, by outcome.
type MinuteExecutions struct {
	// Minute is the start of the minute, in UTC.
	Minute    time.Time
	Succeeded int64
	Failed    int64
}

// ExecutionCounts returns the attempts of the collections' jobs that ended
// in each minute from the one holding from up to the one before to, for
// the minutes that have any, earliest first, in one pipeline. Minutes
// more than 25 hours before to are gone: the window starts after them.
func (ix *Index) ExecutionCounts(ctx context.Context, collections []contracts.CollectionRef, from, to time.Time) ([]MinuteExecutions, error) {
	from = from.UTC().Truncate(time.Minute)
	to = to.UTC()
	if earliest := to.Add(-executionsKept).Truncate(time.Minute); from.Before(earliest) {
		from = earliest
	}
	if len(collections) == 0 || !from.Before(to) {
		return nil, nil
	}
	wanted := make(map[string]bool, len(collections))
	for _, c := range collections {
		wanted[c.Tokens()] = true
	}
	var minutes []time.Time
	for m := from; m.Before(to); m = m.Add(time.Minute) {
		minutes = append(minutes, m)
	}
	pipe := ix.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(minutes))
	for i, m := range minutes {
		cmds[i] = pipe.HGetAll(ctx, executionsKey(ix.cfg.Prefix, m))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("reading the executions of %d minutes: %w", len(minutes), err)
	}
	var out []MinuteExecutions
	for i, cmd := range cmds {
		me := MinuteExecutions{Minute: minutes[i]}
		for field, v := range cmd.Val() {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue // not a counter of ours
			}
			switch {
			case strings.HasSuffix(field, succeededSuffix) && wanted[strings.TrimSuffix(field, succeededSuffix)]:
				me.Succeeded += n
			case strings.HasSuffix(field, failedSuffix) && wanted[strings.TrimSuffix(field, failedSuffix)]:
				me.Failed += n
			}
		}
		if me.Succeeded != 0 || me.Failed != 0 {
			out = append(out, me)
		}
	}
	return out, nil
}
