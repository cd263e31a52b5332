package backend

import "context"

// SliceRange applies GetRange's rules to a whole object's bytes: length < 0
// reads to the end, a range past the end is truncated, and an empty object
// yields an empty (non-nil) slice.
func SliceRange(data []byte, offset, length int64) []byte {
	n := int64(len(data))
	if offset < 0 {
		offset = 0
	}
	if offset >= n {
		return []byte{}
	}
	end := n
	if length >= 0 && offset+length < n {
		end = offset + length
	}
	return append([]byte{}, data[offset:end]...)
}

type reusedKeyCtx struct{}

// ReusedKey marks the requests made with the returned context as writes to
// a reused key (a lock record, a heartbeat object, any overwrite of a key
// that is written more than once). The cloud adapters send such a write
// once, like a conditional request, instead of retrying it: its owner
// resolves an ambiguous answer itself (see package backend/poison). Reads
// and writes of fresh, uniquely named files keep the bounded retries.
func ReusedKey(ctx context.Context) context.Context {
	return context.WithValue(ctx, reusedKeyCtx{}, true)
}

// IsReusedKey reports whether ctx was marked by ReusedKey.
func IsReusedKey(ctx context.Context) bool {
	v, _ := ctx.Value(reusedKeyCtx{}).(bool)
	return v
}
