package store

import "sync"

// recordCacheSize bounds the job records a Store keeps decoded: about
// 1–2 KB each.
const recordCacheSize = 100_000

// recordCache keeps job records as decoded from the bucket, by key and
// revision: a value read again at the same revision is the same record, so
// its JSON need not be decoded again. The records keep their secrets
// sealed; decodeJob opens them for each caller. It is safe for concurrent
// use.
type recordCache struct {
	mu  sync.Mutex
	max int
	m   map[string]cachedRecord
}

type cachedRecord struct {
	revision uint64
	record   jobRecord
}

func newRecordCache(max int) *recordCache {
	return &recordCache{max: max, m: make(map[string]cachedRecord)}
}

// get returns the record of key at revision, or false. With own set its
// properties are the caller's to change; otherwise they are shared with
// the cache and every other reader, and must not be changed.
func (c *recordCache) get(key string, revision uint64, own bool) (jobRecord, bool) {
	if c == nil {
		return jobRecord{}, false
	}
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || e.revision != revision {
		return jobRecord{}, false
	}
	r := e.record
	if !own {
		return r, true
	}
	r.Properties = r.Properties.Clone()
	if r.Ended != nil {
		ended := *r.Ended
		r.Ended = &ended
	}
	return r, true
}

// put keeps the record of key at revision. When the cache is full it
// forgets a tenth of its records, whichever the map yields first.
func (c *recordCache) put(key string, revision uint64, r jobRecord) {
	if c == nil || c.max <= 0 {
		return
	}
	r.Properties = r.Properties.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		drop := max(1, c.max/10)
		for k := range c.m {
			delete(c.m, k)
			if drop--; drop == 0 {
				break
			}
		}
	}
	c.m[key] = cachedRecord{revision: revision, record: r}
}
