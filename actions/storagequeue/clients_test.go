package storagequeue

import (
	"errors"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2"
)

// countingBuild returns a build function that makes distinct clients and
// records the URLs it was asked for.
func countingBuild() (func(string, string) (*azqueue.QueueClient, error), *[]string) {
	var mu sync.Mutex
	var urls []string
	return func(queueURL, sasToken string) (*azqueue.QueueClient, error) {
		mu.Lock()
		urls = append(urls, queueURL)
		mu.Unlock()
		return azqueue.NewQueueClientWithNoCredential(queueURL+"?"+sasToken, nil)
	}, &urls
}

func TestClientCache(t *testing.T) {
	t.Parallel()

	t.Run("returns the same client for the same queue and token", func(t *testing.T) {
		t.Parallel()
		build, _ := countingBuild()
		c := newClientCache(8, build)
		a, err := c.get("http://h/acct/q1", "sig=a")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := c.get("http://h/acct/q1", "sig=a")
		if a != b || c.builds() != 1 {
			t.Errorf("second get built a new client (builds %d)", c.builds())
		}
	})

	t.Run("builds a new client for another queue or another token", func(t *testing.T) {
		t.Parallel()
		build, _ := countingBuild()
		c := newClientCache(8, build)
		a, _ := c.get("http://h/acct/q1", "sig=a")
		b, _ := c.get("http://h/acct/q2", "sig=a")
		d, _ := c.get("http://h/acct/q1", "sig=b")
		if a == b || a == d || b == d || c.builds() != 3 || c.len() != 3 {
			t.Errorf("builds %d, len %d; want three distinct clients", c.builds(), c.len())
		}
	})

	t.Run("tells pairs apart that join to the same text", func(t *testing.T) {
		t.Parallel()
		if keyOf("http://h/q", "ab") == keyOf("http://h/qa", "b") {
			t.Error("keys collide when the boundary moves")
		}
	})

	t.Run("drops the least recently used client past its limit", func(t *testing.T) {
		t.Parallel()
		build, urls := countingBuild()
		c := newClientCache(2, build)
		first, _ := c.get("http://h/a/q1", "s")
		c.get("http://h/a/q2", "s")
		c.get("http://h/a/q1", "s") // q1 is now the most recently used
		c.get("http://h/a/q3", "s") // drops q2
		if c.len() != 2 {
			t.Fatalf("len %d, want 2", c.len())
		}
		if again, _ := c.get("http://h/a/q1", "s"); again != first {
			t.Error("q1 was dropped although q2 was used less recently")
		}
		c.get("http://h/a/q2", "s")
		if want := []string{"http://h/a/q1", "http://h/a/q2", "http://h/a/q3", "http://h/a/q2"}; len(*urls) != len(want) {
			t.Errorf("built %v, want %v", *urls, want)
		}
	})

	t.Run("keeps nothing when building fails", func(t *testing.T) {
		t.Parallel()
		c := newClientCache(2, func(string, string) (*azqueue.QueueClient, error) { return nil, errors.New("no") })
		if _, err := c.get("http://h/a/q", "s"); err == nil || c.len() != 0 || c.builds() != 0 {
			t.Errorf("get = %v, len %d, builds %d", err, c.len(), c.builds())
		}
	})

	t.Run("is safe for concurrent use and builds once per key", func(t *testing.T) {
		t.Parallel()
		build, _ := countingBuild()
		c := newClientCache(4, build)
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				if _, err := c.get("http://h/a/q", "s"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if c.builds() != 1 {
			t.Errorf("builds %d, want 1", c.builds())
		}
	})

	t.Run("is empty after clear", func(t *testing.T) {
		t.Parallel()
		build, _ := countingBuild()
		c := newClientCache(4, build)
		c.get("http://h/a/q", "s")
		c.clear()
		if c.len() != 0 {
			t.Errorf("len %d after clear", c.len())
		}
	})
}
