package timer

import (
	"testing"
)

func TestBuilt(t *testing.T) {
	t.Parallel()

	t.Run("an index is built once marked and until Redis is emptied", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		if built, err := ix.Built(b.ctx); err != nil || built {
			t.Fatalf("Built = %v, %v before MarkBuilt", built, err)
		}
		mustSchedule(t, ix, entry("a", "", t0))
		if err := ix.MarkBuilt(b.ctx); err != nil {
			t.Fatal(err)
		}
		if built, err := ix.Built(b.ctx); err != nil || !built {
			t.Fatalf("Built = %v, %v after MarkBuilt", built, err)
		}
		b.flush(t)
		if built, err := ix.Built(b.ctx); err != nil || built {
			t.Errorf("Built = %v, %v after a flush", built, err)
		}
		if n := mustLen(t, ix); n != 0 {
			t.Errorf("Len = %d after a flush", n)
		}
	})
}

// flush empties Redis: FLUSHALL on miniredis. A real server's database is
// shared with the tests running in parallel, so there it deletes every key
// of the test's prefix instead, which is the same to the index.
func (b bundle) flush(t testing.TB) {
	t.Helper()
	if b.mr != nil {
		b.mr.FlushAll()
		return
	}
	if keys := b.keys(t); len(keys) > 0 {
		if err := b.rdb.Del(b.ctx, keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
