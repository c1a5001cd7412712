package timer

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// resetFaultsScript sets a job's consecutive faults to zero, leaving the
// rest of its status; a job without a status is left without one.
//
//	KEYS[1..5] the partition's keys (see luaLib)
//	ARGV[1]    job id
//
// Returns 1 when the job had a status, else 0.
var resetFaultsScript = redis.NewScript(luaLib + `
local v = redis.call('HGET', KEYS[5], ARGV[1])
if not v then return 0 end
local f = status_fields(v)
f[10] = '0'
redis.call('HSET', KEYS[5], ARGV[1], table.concat(f, '|'))
return 1
`)

// ResetFaults sets the job's count of consecutive Faulted occurrences to
// zero: the job was enabled again.
func (ix *Index) ResetFaults(ctx context.Context, jobKey string) error {
	if err := resetFaultsScript.Run(ctx, ix.rdb, ix.keysOf(jobKey), jobID(jobKey)).Err(); err != nil {
		return fmt.Errorf("resetting the consecutive faults of %q: %w", jobKey, err)
	}
	return nil
}
