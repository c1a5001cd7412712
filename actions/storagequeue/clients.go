package storagequeue

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2"
)

// clientKey identifies a queue client by a SHA-256 of its queue URL and
// SAS token, so that the cache never holds a token as a key.
type clientKey [sha256.Size]byte

// keyOf returns the key of a queue URL and SAS token. Each value is hashed
// with its length first, so that no two pairs hash alike by moving the
// boundary between them.
func keyOf(queueURL, sasToken string) clientKey {
	h := sha256.New()
	var n [8]byte
	for _, v := range []string{queueURL, sasToken} {
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	var k clientKey
	h.Sum(k[:0])
	return k
}

// clientCache keeps at most limit queue clients, dropping the least
// recently used past that. A queue client holds no connection of its own
// (they all share the sender's transport), so dropping one releases
// nothing but memory.
type clientCache struct {
	limit int
	build func(queueURL, sasToken string) (*azqueue.QueueClient, error)

	mu      sync.Mutex
	order   *list.List // of *clientEntry, most recently used first
	entries map[clientKey]*list.Element
	built   int // how many clients build has made, a measure of reuse
}

type clientEntry struct {
	key    clientKey
	client *azqueue.QueueClient
}

func newClientCache(limit int, build func(queueURL, sasToken string) (*azqueue.QueueClient, error)) *clientCache {
	return &clientCache{limit: max(limit, 1), build: build, order: list.New(), entries: map[clientKey]*list.Element{}}
}

// get returns the client of a queue URL and SAS token, building it on
// first use. Building makes no network call, so it happens under the lock.
func (c *clientCache) get(queueURL, sasToken string) (*azqueue.QueueClient, error) {
	k := keyOf(queueURL, sasToken)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*clientEntry).client, nil
	}
	client, err := c.build(queueURL, sasToken)
	if err != nil {
		return nil, err
	}
	c.built++
	c.entries[k] = c.order.PushFront(&clientEntry{key: k, client: client})
	for c.order.Len() > c.limit {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*clientEntry).key)
	}
	return client, nil
}

// len returns how many clients the cache holds.
func (c *clientCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// builds returns how many clients the cache has built.
func (c *clientCache) builds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.built
}

// clear drops every client.
func (c *clientCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.entries)
}
