package backend

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
