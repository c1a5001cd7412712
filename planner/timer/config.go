package timer

import (
	"cmp"
	"fmt"
	"strings"
)

// Limits on Config.
const (
	maxPartitions = 1024
	maxBatch      = 100
)

// Config configures an Index. Every planner sharing a Redis must use the same
// Prefix and Partitions; changing Partitions needs an emptied index and a
// rebuild.
type Config struct {
	// Prefix starts every key; it may not contain '{' or '}', which would
	// change the keys' hash tags. Defaults to "sched".
	Prefix string
	// Partitions is the number of partitions, each its own Redis Cluster hash
	// slot, from 1 to 1024. Defaults to 16.
	Partitions int
	// Batch is the most entries one Lua call moves, from 1 to 100. Defaults
	// to 100.
	Batch int
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sched")
	c.Partitions = cmp.Or(c.Partitions, 16)
	c.Batch = cmp.Or(c.Batch, maxBatch)
	return c
}

// validate names the first field of c that is out of range.
func (c Config) validate() error {
	switch {
	case strings.ContainsAny(c.Prefix, "{}"):
		return fmt.Errorf("invalid Prefix %q: '{' and '}' would change the hash tags", c.Prefix)
	case c.Partitions < 1 || c.Partitions > maxPartitions:
		return fmt.Errorf("invalid Partitions %d: use 1 to %d", c.Partitions, maxPartitions)
	case c.Batch < 1 || c.Batch > maxBatch:
		return fmt.Errorf("invalid Batch %d: use 1 to %d", c.Batch, maxBatch)
	}
	return nil
}
