package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// atomicFile is a file the CLI writes beside its target and renames into
// place, so a reader (or the next command) sees the old file or the whole
// new one, never a part. Every command that replaces a user's file (token
// add, export, embed) goes through it.
//
// The order is what makes it crash-safe: the data is fsynced before the
// rename, and the directory after it. Without the first fsync a crash just
// after the rename can leave the target name on an empty or short file (the
// rename reached the disk, the data did not); without the second the rename
// itself can be lost. backend/local writes its objects the same way.
type atomicFile struct {
	*os.File
	target string
}

// fileSteps are the durable steps of atomicFile.Commit. They are a value a
// test can replace (to record their order, or fail one as a crash would);
// the CLI uses durableSteps.
type fileSteps struct {
	sync    func(f *os.File) error
	rename  func(from, to string) error
	syncDir func(dir string) error
}

var durableSteps = fileSteps{sync: (*os.File).Sync, rename: os.Rename, syncDir: syncDir}

// createAtomic opens a fresh temporary file in target's directory (mode
// perm), named after the target and hidden (a leading dot).
func createAtomic(target string, perm os.FileMode) (*atomicFile, error) {
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return nil, err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return &atomicFile{File: tmp, target: target}, nil
}

// Commit makes the written bytes durable and puts them at the target:
// fsync, close, rename, fsync the directory. On an error before the rename
// the temporary file is removed and the target is unchanged.
func (f *atomicFile) Commit() error {
	steps := durableSteps
	err := steps.sync(f.File)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = steps.rename(f.Name(), f.target)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return steps.syncDir(filepath.Dir(f.target))
}

// Abort discards the temporary file; the target is unchanged. It is safe
// after Commit (then it does nothing).
func (f *atomicFile) Abort() {
	f.Close()
	os.Remove(f.Name())
}

// syncDir fsyncs a directory, so a rename or a new name in it survives a
// crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync the directory: %w", err)
	}
	return nil
}

// writeFileAtomic writes data to path (mode perm) through an atomicFile.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := createAtomic(path, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeOutput runs write on standard output (out "" or "-") or on a file
// written beside out and renamed over it once complete, so a failed write
// leaves an existing file as it was.
func writeOutput(out string, stdout io.Writer, write func(io.Writer) error) error {
	if out == "" || out == "-" {
		return write(stdout)
	}
	tmp, err := createAtomic(out, 0o600)
	if err != nil {
		return fmt.Errorf("create the output file: %w", err)
	}
	defer tmp.Abort()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Commit(); err != nil {
		return fmt.Errorf("write the output file: %w", err)
	}
	return nil
}
