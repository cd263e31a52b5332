package table

import (
	"container/list"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// The object cache. Every file a version references other than its
// manifest (fragments, deletion vectors, key index files) has a fresh name
// and is never rewritten, so what is decoded from one can be reused by every
// version that references it. A Cache is keyed by the object's key (the
// dataset path plus the file's relative path), holds decoded fragments
// (whole, or some columns under the path plus the column list), deletion
// vectors, key index directories and pages, and decoded adjacency index
// files, and is bounded by
// a memory budget (estimated decoded bytes, least recently used dropped
// first). A dataset handle and every version derived from it by a commit
// share one Cache; the graph handle passes its own to every table version
// it opens, so a read after a one-row write fetches only the new fragment.

// CacheBytesEnv overrides DefaultCacheBytes.
const CacheBytesEnv = "OMNIGRAPH_CACHE_BYTES"

// defaultCacheBytes is the budget of a Cache made with a limit <= 0 when
// the environment does not set one.
const defaultCacheBytes = 256 << 20

// DefaultCacheBytes is the budget a new Cache gets: $OMNIGRAPH_CACHE_BYTES
// when it is a positive integer (bytes), else 256 MiB.
func DefaultCacheBytes() int64 {
	if v := strings.TrimSpace(os.Getenv(CacheBytesEnv)); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return defaultCacheBytes
}

// Cache is a bounded, concurrency-safe cache of decoded immutable objects,
// shared by the dataset versions handed it.
type Cache struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	lru     *list.List // of *cacheItem, most recent first
	entries map[string]*list.Element

	hits, misses, evictions int64
}

type cacheItem struct {
	key  string
	val  any
	size int64
}

// NewCache makes a cache bounded by limit estimated bytes (<= 0:
// DefaultCacheBytes).
func NewCache(limit int64) *Cache {
	if limit <= 0 {
		limit = DefaultCacheBytes()
	}
	return &Cache{limit: limit, lru: list.New(), entries: map[string]*list.Element{}}
}

// CacheStats is a snapshot of a cache's use.
type CacheStats struct {
	Entries                 int
	Bytes, Limit            int64
	Hits, Misses, Evictions int64
}

// Stats reports the cache's use so far.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Entries: c.lru.Len(), Bytes: c.used, Limit: c.limit, Hits: c.hits, Misses: c.misses, Evictions: c.evictions}
}

// SetLimit changes the budget (<= 0: DefaultCacheBytes) and evicts down
// to it.
func (c *Cache) SetLimit(limit int64) {
	if limit <= 0 {
		limit = DefaultCacheBytes()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = limit
	c.evictLocked("")
}

func (c *Cache) get(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.lru.MoveToFront(el)
	return el.Value.(*cacheItem).val, true
}

// put stores val under key. An object larger than the whole budget is not
// kept.
func (c *Cache) put(key string, val any, size int64) {
	if c == nil || size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		it := el.Value.(*cacheItem)
		c.used += size - it.size
		it.val, it.size = val, size
		c.lru.MoveToFront(el)
	} else {
		c.entries[key] = c.lru.PushFront(&cacheItem{key: key, val: val, size: size})
		c.used += size
	}
	c.evictLocked(key)
}

// evictLocked drops least recently used objects, never keep, until the
// cache fits its budget.
func (c *Cache) evictLocked(keep string) {
	for el := c.lru.Back(); el != nil && c.used > c.limit; {
		prev := el.Prev()
		it := el.Value.(*cacheItem)
		if it.key != keep || keep == "" {
			c.lru.Remove(el)
			delete(c.entries, it.key)
			c.used -= it.size
			c.evictions++
		}
		el = prev
	}
}

// decodedFragment is a whole fragment decoded: every column of every row
// group, in row order. Its records are shared read-only by every reader.
type decodedFragment struct {
	recs []arrow.Record
}

func (d *decodedFragment) bytes() int64 {
	var n int64
	for _, r := range d.recs {
		for _, col := range r.Columns() {
			n += arrayBytes(col.Data())
		}
	}
	return n + 64
}

func arrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, ch := range d.Children() {
		n += arrayBytes(ch)
	}
	return n
}
