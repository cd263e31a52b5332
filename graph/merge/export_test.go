package merge

// Internals the external tests of this directory (package merge_test)
// reach: the export_test.go pattern, compiled only into the test binary.

// WithAfterCapture returns opts with fn run once the merge has captured the
// source head and the target token, before it classifies: the seam to move
// a branch mid-merge.
func WithAfterCapture(opts Options, fn func()) Options {
	opts.afterCapture = fn
	return opts
}
