package timer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// tryLockScript takes a maintenance lease, or renews it for its owner.
//
//	KEYS[1] <prefix>:lock:<name>
//	ARGV[1] owner
//	ARGV[2] time to live (ms)
//
// Returns 1 when owner holds the lease now, 0 when someone else does.
var tryLockScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// unlockScript deletes a maintenance lease if owner holds it.
//
//	KEYS[1] <prefix>:lock:<name>
//	ARGV[1] owner
//
// Returns 1 when deleted, 0 when owner did not hold it.
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`)

// TryLock takes the maintenance lease name (such as "rebuild" or
// "retention") for owner, for ttl, and reports whether owner holds it. The
// owner calls it again before ttl runs out to renew the lease.
func (ix *Index) TryLock(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if err := checkLock(name, owner); err != nil {
		return false, err
	}
	if ttl < time.Millisecond {
		return false, fmt.Errorf("taking the lease %q: time to live %v is shorter than a millisecond", name, ttl)
	}
	n, err := tryLockScript.Run(ctx, ix.rdb, []string{lockKey(ix.cfg.Prefix, name)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("taking the lease %q: %w", name, err)
	}
	return n == 1, nil
}

// Unlock gives up the maintenance lease name if owner holds it; otherwise it
// does nothing.
func (ix *Index) Unlock(ctx context.Context, name, owner string) error {
	if err := checkLock(name, owner); err != nil {
		return err
	}
	if err := unlockScript.Run(ctx, ix.rdb, []string{lockKey(ix.cfg.Prefix, name)}, owner).Err(); err != nil {
		return fmt.Errorf("releasing the lease %q: %w", name, err)
	}
	return nil
}

func checkLock(name, owner string) error {
	if name == "" || owner == "" {
		return errors.New("a maintenance lease needs a name and an owner")
	}
	return nil
}
