package timer

import (
	"context"
	"fmt"
)

// MarkBuilt records that the index holds every job: the planner calls it
// after rebuilding the index from NATS.
func (ix *Index) MarkBuilt(ctx context.Context) error {
	if err := ix.rdb.Set(ctx, builtKey(ix.cfg.Prefix), "1", 0).Err(); err != nil {
		return fmt.Errorf("marking the index built: %w", err)
	}
	return nil
}

// Built reports whether MarkBuilt was called since Redis was last emptied.
// False means the index may be missing entries and the planner must rebuild
// it from NATS.
func (ix *Index) Built(ctx context.Context) (bool, error) {
	n, err := ix.rdb.Exists(ctx, builtKey(ix.cfg.Prefix)).Result()
	if err != nil {
		return false, fmt.Errorf("checking whether the index is built: %w", err)
	}
	return n == 1, nil
}
