package local

// SetAfterCompare installs a hook that runs inside PutIfMatch between the
// version compare and the rename.
func SetAfterCompare(f func()) { afterCompare = f }

// SetSyncDirHook replaces the directory fsync after a rename, link or
// unlink (nil restores it).
func SetSyncDirHook(f func(dir string) error) { syncDirHook = f }
