package local

// SetAfterCompare installs a hook that runs inside PutIfMatch between the
// version compare and the rename.
func SetAfterCompare(f func()) { afterCompare = f }
