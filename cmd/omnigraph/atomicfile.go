package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// writeOutput runs write on standard output (out "" or "-") or on the file
// out names. What "the file" is depends on what out is, as a shell's
// redirection would treat it:
//
//   - a FIFO, a character device, a socket, or a descriptor of this process
//     (/dev/fd/N, /dev/stdout, /proc/self/fd/N, anything a symlink leads
//     there from): opened and written directly. Renaming over one would
//     replace the pipe or the device with a regular file its reader never
//     sees (and, run as root, replace /dev/stdout itself).
//   - a symlink to a file (or to a name not yet created): the link is
//     resolved and its target replaced; the link stays a link.
//   - a regular file, or nothing yet: written beside it and renamed over it
//     once complete, so a failed write leaves an existing file as it was.
//     An existing file keeps its permission bits; a new one is 0600.
func writeOutput(out string, stdout io.Writer, write func(io.Writer) error) error {
	if out == "" || out == "-" {
		return write(stdout)
	}
	dst, err := resolveOutput(out)
	if err != nil {
		return fmt.Errorf("the output file %s: %w", out, err)
	}
	if dst.direct {
		return writeDirect(out, dst.regular, write)
	}
	tmp, err := createAtomic(dst.path, dst.perm)
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

// outputTarget is what writeOutput does with an --out path.
type outputTarget struct {
	// direct: open the path given and write to it (no temporary file).
	direct bool
	// regular: the direct target is a regular file (a descriptor redirected
	// to one), so it is opened to append as the shell's descriptor would.
	regular bool
	// path is the file renamed into place (symlinks resolved), perm its mode.
	path string
	perm os.FileMode
}

// maxLinkHops bounds symlink resolution, as the kernel's ELOOP does.
const maxLinkHops = 40

// resolveOutput follows out through its symlinks one hop at a time (so a
// hop into a process's descriptor table is seen, and a dangling link
// resolves to the name it would create) and says how to write it.
func resolveOutput(out string) (outputTarget, error) {
	path := filepath.Clean(out)
	for hop := 0; ; hop++ {
		if isDescriptorPath(path) {
			fi, err := os.Stat(out)
			if err != nil {
				return outputTarget{}, err
			}
			return outputTarget{direct: true, regular: fi.Mode().IsRegular()}, nil
		}
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return outputTarget{path: path, perm: 0o600}, nil
		case err != nil:
			return outputTarget{}, err
		}
		mode := fi.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			if hop >= maxLinkHops {
				return outputTarget{}, fmt.Errorf("too many levels of symbolic links")
			}
			link, err := os.Readlink(path)
			if err != nil {
				return outputTarget{}, err
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(path), link)
			}
			path = filepath.Clean(link)
		case mode.IsDir():
			return outputTarget{}, fmt.Errorf("is a directory: name a file, or - for standard output")
		case mode.IsRegular():
			return outputTarget{path: path, perm: mode.Perm()}, nil
		default: // FIFO, device, socket
			return outputTarget{direct: true}, nil
		}
	}
}

// isDescriptorPath reports whether path names an open descriptor of a
// process (/dev/fd/N, /dev/stdout, /proc/PID/fd/N): what it leads to is
// whatever the descriptor is, and only opening it reaches that.
func isDescriptorPath(path string) bool {
	switch path {
	case "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return true
	}
	if strings.HasPrefix(path, "/dev/fd/") {
		return true
	}
	// /proc/self/fd/N, /proc/thread-self/fd/N, /proc/1234/fd/N
	if rest, ok := strings.CutPrefix(path, "/proc/"); ok {
		if _, fd, ok := strings.Cut(rest, "/"); ok && strings.HasPrefix(fd, "fd/") {
			return true
		}
	}
	return false
}

// writeDirect opens out as it is (a pipe, a device, a descriptor) and runs
// write on it. A failed write cannot be undone there; the error says so.
func writeDirect(out string, regular bool, write func(io.Writer) error) error {
	flag := os.O_WRONLY
	if regular {
		flag |= os.O_APPEND
	}
	f, err := os.OpenFile(out, flag, 0)
	if err != nil {
		return fmt.Errorf("open the output %s: %w", out, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the output %s: %w", out, err)
	}
	return nil
}
