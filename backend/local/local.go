// Package local is the filesystem StorageAdapter: one directory holds the
// store, each key is a file below it.
//
// Every write goes to a sibling temp file name#<digits>, is fsynced, and is
// then published with link(2) (PutIfAbsent: the kernel refuses an existing
// name, so exactly one racer wins) or rename(2) (Put, PutIfMatch: readers see
// the old file or the new one), after which the directory is fsynced. Temp
// names are refused as keys and never listed, so a crash leaves residue that
// is invisible until a cleanup sweeps it.
//
// PutIfMatch is a real compare-and-swap across goroutines and processes: the
// compare and the rename run under an exclusive flock(2) on a lock file in the
// root, striped by key hash. Put and Delete take the same lock, so a CAS never
// overwrites a write it did not see. The lock files are named
// .omnigraph-lock#<n>, a temp shape, so they are never listed and cannot be
// keys; a cleanup sweep must leave them alone (taking the lock re-checks that
// the file it locked is still the one on disk, so even a swept lock file only
// costs a retry). Close removes the lock files no one holds, so a closed
// store leaves none behind.
//
// A file and a directory cannot share a name, so the store declares
// KeyAndChildCoexist false and refuses the second of "k" and "k/child" with a
// Precondition error.
package local

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/omnigraph-go/omnigraph/backend"
)

var _ backend.StorageAdapter = (*Store)(nil)

// lockStripes is the number of lock files; keys hash onto them so unrelated
// keys rarely wait for each other.
const lockStripes = 16

// lockPrefix names the lock files in the root; the "#<n>" suffix makes them
// temp-shaped, hence unlistable and unusable as keys.
const lockPrefix = ".omnigraph-lock#"

// Store is a StorageAdapter over one directory.
type Store struct {
	root string

	// clock hands out strictly increasing modification times within the
	// process, so two writes of the same size that reuse an inode still get
	// different version tokens.
	clockMu sync.Mutex
	last    int64

	// stripes serialise this process's writers before they touch flock, so
	// flock only arbitrates between processes and rarely has to poll.
	stripes [lockStripes]sync.Mutex
}

func init() {
	backend.Register("file", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		if err := backend.CheckParams(u); err != nil {
			return nil, err
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, backend.NewError("open", "", backend.KindConfiguration,
				fmt.Errorf("file:// URLs name a local directory; host %q is not supported (use file:///abs/path or a plain path)", u.Host))
		}
		if u.Path == "" {
			return nil, backend.NewError("open", "", backend.KindConfiguration,
				fmt.Errorf("file:// URL has no path; use file:///abs/path or a plain path"))
		}
		return New(filepath.FromSlash(u.Path))
	})
}

// New opens the directory root as a store. Opening creates nothing: a
// missing directory reads as an empty store, and the first write creates it
// (with its parents), so a read-only command or a command that fails before
// writing never leaves a directory behind. A path that exists but is not a
// directory is refused.
func New(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, backend.NewError("open", "", backend.KindConfiguration, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err == nil && !fi.IsDir():
		return nil, backend.NewError("open", "", backend.KindConfiguration,
			fmt.Errorf("the store path is not a directory; give a directory path"))
	case err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(errnoOf(err), unix.ENOTDIR):
		return nil, backend.NewError("open", "", backend.KindConfiguration,
			fmt.Errorf("cannot read the store directory: %v", errnoOf(err)))
	case err != nil && errors.Is(errnoOf(err), unix.ENOTDIR):
		return nil, backend.NewError("open", "", backend.KindConfiguration,
			fmt.Errorf("a parent of the store path is not a directory; give a directory path"))
	}
	return &Store{root: abs}, nil
}

// RootExists reports whether the store's directory exists yet.
func (s *Store) RootExists() bool {
	fi, err := os.Stat(s.root)
	return err == nil && fi.IsDir()
}

// ensureRoot creates the store's directory (and its parents) for a write.
func (s *Store) ensureRoot(op, key string) error {
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return backend.NewError(op, key, backend.KindConfiguration,
			fmt.Errorf("cannot create the store directory: %v", errnoOf(err)))
	}
	return nil
}

// Root returns the store's directory.
func (s *Store) Root() string { return s.root }

func (s *Store) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

// Capabilities implements backend.StorageAdapter.
func (s *Store) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		ConditionalCreate:  true,
		ConditionalUpdate:  true,
		AtomicRename:       true,
		KeyAndChildCoexist: false,
		VersionPerWrite:    true,
	}
}

// Close implements backend.StorageAdapter. It removes the lock files that
// no one holds, so a store used only briefly (omnigraph storage check, a
// failed command) leaves no .omnigraph-lock#N files behind. A lock file is
// unlinked only while its flock is held, and lock re-checks that the file
// it locked is still the one at the name, so a writer in another process
// (or another Store on the same root) that opened it just before only
// retries. The Store stays usable: the next write creates the file again.
func (s *Store) Close() error {
	for i := range s.stripes {
		mu := &s.stripes[i]
		if !mu.TryLock() {
			continue // a writer of this Store holds the stripe
		}
		name := filepath.Join(s.root, lockPrefix+strconv.Itoa(i))
		if f, err := os.OpenFile(name, os.O_RDWR, 0); err == nil {
			if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
				held, herr := f.Stat()
				disk, derr := os.Stat(name)
				if herr == nil && derr == nil && os.SameFile(held, disk) {
					os.Remove(name)
				}
				unix.Flock(int(f.Fd()), unix.LOCK_UN)
			}
			f.Close()
		}
		mu.Unlock()
	}
	return nil
}

func check(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return backend.NewError(op, key, backend.KindTransient, err)
	}
	return backend.ValidateKey(key)
}

// errnoOf strips the path from an os error: storage paths never appear in
// messages, the key does.
func errnoOf(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// classify maps a filesystem error to the taxonomy, from the errno alone.
func classify(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return backend.NewError(op, key, backend.KindTransient, err)
	}
	cause := errnoOf(err)
	kind := backend.KindUnknown
	var errno syscall.Errno
	if errors.As(cause, &errno) {
		switch errno {
		case unix.ENOENT, unix.ENOTDIR:
			kind = backend.KindNotFound
		case unix.EEXIST:
			kind = backend.KindPrecondition
		case unix.EACCES, unix.EPERM, unix.EROFS, unix.ENOSPC, unix.EDQUOT, unix.EFBIG,
			unix.ENAMETOOLONG, unix.EXDEV, unix.EMLINK, unix.EOPNOTSUPP:
			kind = backend.KindConfiguration
		case unix.EINTR, unix.EAGAIN, unix.ETIMEDOUT:
			kind = backend.KindTransient
		case unix.EIO:
			kind = backend.KindUnknown
		}
	}
	return backend.NewError(op, key, kind, cause)
}

func notFound(op, key string) error {
	return backend.NewError(op, key, backend.KindNotFound, nil)
}

func version(fi os.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return strconv.FormatUint(ino, 36) + "-" + strconv.FormatInt(fi.Size(), 36) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 36)
}

func attrs(key string, fi os.FileInfo) backend.Attrs {
	return backend.Attrs{Key: key, Size: fi.Size(), Version: version(fi), ModTime: fi.ModTime()}
}

// openFile opens key's file for reading; a directory or a missing file is
// NotFound.
func (s *Store) openFile(op, key string) (*os.File, os.FileInfo, error) {
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, nil, classifyRead(op, key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, classifyRead(op, key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notFound(op, key)
	}
	return f, fi, nil
}

func classifyRead(op, key string, err error) error {
	if errors.Is(errnoOf(err), unix.EISDIR) {
		return notFound(op, key)
	}
	return classify(op, key, err)
}

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := check(ctx, "get", key); err != nil {
		return nil, backend.Attrs{}, err
	}
	f, fi, err := s.openFile("get", key)
	if err != nil {
		return nil, backend.Attrs{}, err
	}
	defer f.Close()
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, backend.Attrs{}, classify("get", key, err)
	}
	return data, attrs(key, fi), nil
}

// GetRange implements backend.StorageAdapter.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := check(ctx, "get-range", key); err != nil {
		return nil, err
	}
	f, fi, err := s.openFile("get-range", key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := fi.Size()
	if offset < 0 {
		offset = 0
	}
	if offset >= size {
		return []byte{}, nil
	}
	n := size - offset
	if length >= 0 && length < n {
		n = length
	}
	data := make([]byte, n)
	if _, err := f.ReadAt(data, offset); err != nil && !(errors.Is(err, io.EOF)) {
		return nil, classify("get-range", key, err)
	}
	return data, nil
}

// Stat implements backend.StorageAdapter.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	if err := check(ctx, "stat", key); err != nil {
		return backend.Attrs{}, err
	}
	fi, err := os.Stat(s.path(key))
	if err != nil {
		return backend.Attrs{}, classifyRead("stat", key, err)
	}
	if !fi.Mode().IsRegular() {
		return backend.Attrs{}, notFound("stat", key)
	}
	return attrs(key, fi), nil
}

// Exists implements backend.StorageAdapter.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := check(ctx, "exists", key); err != nil {
		return false, err
	}
	fi, err := os.Stat(s.path(key))
	if err != nil {
		if k := backend.KindOf(classify("exists", key, err)); k == backend.KindNotFound {
			return false, nil
		}
		return false, classify("exists", key, err)
	}
	if fi.Mode().IsRegular() {
		return true, nil
	}
	if !fi.IsDir() {
		return false, nil
	}
	// A directory exists only if some object lives below it.
	found := false
	err = s.walk(ctx, key+"/", "", func(string, os.FileInfo) bool {
		found = true
		return false
	})
	if err != nil {
		return false, classify("exists", key, err)
	}
	return found, nil
}

// walk visits, in ascending byte order of their keys, the objects whose keys
// start with prefix and sort after startAfter, until visit returns false.
// Temp-shaped names and anything that is neither file nor directory are
// skipped; entries that vanish mid-walk (concurrent deletes) are ignored.
func (s *Store) walk(ctx context.Context, prefix, startAfter string, visit func(key string, fi os.FileInfo) bool) error {
	_, err := s.walkDir(ctx, s.root, "", prefix, startAfter, visit)
	return err
}

type entry struct {
	name  string
	isDir bool
	sort  string // name, or name+"/" for a directory: the byte order of its keys
}

func (s *Store) walkDir(ctx context.Context, dir, keyPrefix, prefix, startAfter string, visit func(string, os.FileInfo) bool) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(errnoOf(err), unix.ENOTDIR) {
			return true, nil
		}
		return false, err
	}
	ents := make([]entry, 0, len(des))
	for _, de := range des {
		name := de.Name()
		if backend.IsTempName(name) {
			continue
		}
		isDir := de.IsDir()
		if de.Type()&os.ModeSymlink != 0 {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				continue // broken link: not an object
			}
			isDir = fi.IsDir()
		}
		e := entry{name: name, isDir: isDir, sort: name}
		if isDir {
			e.sort += "/"
		}
		ents = append(ents, e)
	}
	// Sorting by name+"/" for directories gives the byte order of the full
	// keys: every key below directory d starts with "d/", and a file and a
	// directory never share a name.
	sort.Slice(ents, func(i, j int) bool { return ents[i].sort < ents[j].sort })
	for _, e := range ents {
		full := keyPrefix + e.sort
		if e.isDir {
			// Descend only if keys below can match the prefix and can sort
			// after startAfter.
			if !strings.HasPrefix(full, prefix) && !strings.HasPrefix(prefix, full) {
				continue
			}
			if startAfter >= full && !strings.HasPrefix(startAfter, full) {
				continue
			}
			more, err := s.walkDir(ctx, filepath.Join(dir, e.name), full, prefix, startAfter, visit)
			if err != nil || !more {
				return more, err
			}
			continue
		}
		if !strings.HasPrefix(full, prefix) || full <= startAfter {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.name))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if !visit(full, fi) {
			return false, nil
		}
	}
	return true, nil
}

// List implements backend.StorageAdapter.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return backend.ListPage{}, backend.NewError("list", prefix, backend.KindTransient, err)
	}
	if err := backend.ValidatePrefix(prefix); err != nil {
		return backend.ListPage{}, err
	}
	max := opts.MaxKeys
	if max <= 0 {
		max = backend.DefaultPageSize
	}
	var page backend.ListPage
	err := s.walk(ctx, prefix, opts.StartAfter, func(key string, fi os.FileInfo) bool {
		if len(page.Objects) == max {
			page.Truncated = true
			return false
		}
		page.Objects = append(page.Objects, attrs(key, fi))
		return true
	})
	if err != nil {
		return backend.ListPage{}, classify("list", prefix, err)
	}
	return page, nil
}

// now returns a modification time later than any this process handed out
// before, so the version token changes on every write even when the kernel
// reuses an inode and the clock is coarse.
func (s *Store) now() time.Time {
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	n := time.Now().UnixNano()
	if n <= s.last {
		n = s.last + 1
	}
	s.last = n
	return time.Unix(0, n)
}

// mkdirs creates key's parent directories. A file standing where a directory
// must go is a Precondition failure: this store cannot hold "k" and "k/child".
// It reports the directories it created, outermost first.
func (s *Store) mkdirs(op, key string) ([]string, error) {
	segs := strings.Split(key, "/")
	dir := s.root
	var created []string
	if err := s.ensureRoot(op, key); err != nil {
		return nil, err
	}
	for i, seg := range segs[:len(segs)-1] {
		dir = filepath.Join(dir, seg)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			created = append(created, dir)
			continue
		}
		if !errors.Is(err, os.ErrExist) {
			return created, classify(op, key, err)
		}
		fi, serr := os.Stat(dir)
		if serr != nil {
			// Removed between Mkdir and Stat by a Delete tidying up; the
			// caller retries.
			return created, classify(op, key, serr)
		}
		if !fi.IsDir() {
			return created, backend.NewError(op, key, backend.KindPrecondition,
				fmt.Errorf("%q is an object, so no key can live below it (this store cannot keep a key and key/child)", strings.Join(segs[:i+1], "/")))
		}
	}
	return created, nil
}

// stage writes data to a fresh sibling temp file, sets a unique mtime and
// fsyncs it. It returns the temp path and the file's final attributes.
func (s *Store) stage(ctx context.Context, op, key string, data []byte) (string, os.FileInfo, error) {
	final := s.path(key)
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		if err := ctx.Err(); err != nil {
			return "", nil, backend.NewError(op, key, backend.KindTransient, err)
		}
		created, err := s.mkdirs(op, key)
		if err != nil {
			if backend.KindOf(err) == backend.KindNotFound {
				lastErr = err
				continue
			}
			return "", nil, err
		}
		tmp := final + "#" + strconv.FormatUint(rand.Uint64N(1e12), 10)
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			if errors.Is(err, os.ErrExist) || errors.Is(err, os.ErrNotExist) {
				// Name taken, or a concurrent Delete removed the empty
				// directory we just made: try again.
				lastErr = classify(op, key, err)
				continue
			}
			return "", nil, classify(op, key, err)
		}
		fi, err := s.fill(f, tmp, data)
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmp)
			return "", nil, classify(op, key, err)
		}
		// New directories must survive a crash too: sync their parents.
		for _, d := range created {
			syncDir(filepath.Dir(d))
		}
		return tmp, fi, nil
	}
	return "", nil, backend.NewError(op, key, backend.KindTransient, fmt.Errorf("could not stage a temp file: %w", lastErr))
}

func (s *Store) fill(f *os.File, tmp string, data []byte) (os.FileInfo, error) {
	if _, err := f.Write(data); err != nil {
		return nil, err
	}
	t := s.now()
	if err := os.Chtimes(tmp, t, t); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return f.Stat()
}

// syncDirHook, when set by a test, replaces the directory fsync that follows
// a rename, a link or an unlink: it injects a failure after the write took
// effect.
var syncDirHook func(dir string) error

func syncDir(dir string) error {
	if syncDirHook != nil {
		return syncDirHook(dir)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// publishRename moves tmp over key's file. A directory at the key is a
// Precondition failure, unless it is empty residue, which is removed first.
func (s *Store) publishRename(op, key, tmp string) error {
	final := s.path(key)
	err := os.Rename(tmp, final)
	if err != nil && isDirErr(err) {
		if unix.Rmdir(final) == nil {
			err = os.Rename(tmp, final)
		}
	}
	if err != nil {
		os.Remove(tmp)
		if isDirErr(err) {
			return prefixConflict(op, key)
		}
		return classify(op, key, err)
	}
	if err := syncDir(filepath.Dir(final)); err != nil {
		return backend.NewError(op, key, backend.KindUnknown, fmt.Errorf("published, but syncing the directory failed: %v", errnoOf(err)))
	}
	return nil
}

func isDirErr(err error) bool {
	e := errnoOf(err)
	return errors.Is(e, unix.EISDIR) || errors.Is(e, unix.ENOTEMPTY) || errors.Is(e, unix.EEXIST)
}

func prefixConflict(op, key string) error {
	return backend.NewError(op, key, backend.KindPrecondition,
		fmt.Errorf("keys exist below %q, so it cannot be an object too (this store cannot keep a key and key/child)", key))
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := check(ctx, "put", key); err != nil {
		return backend.Attrs{}, err
	}
	tmp, fi, err := s.stage(ctx, "put", key, data)
	if err != nil {
		return backend.Attrs{}, err
	}
	unlock, err := s.lock(ctx, "put", key)
	if err != nil {
		os.Remove(tmp)
		return backend.Attrs{}, err
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		os.Remove(tmp)
		return backend.Attrs{}, backend.NewError("put", key, backend.KindTransient, err)
	}
	if err := s.publishRename("put", key, tmp); err != nil {
		return backend.Attrs{}, err
	}
	return attrs(key, fi), nil
}

// PutIfAbsent implements backend.StorageAdapter. link(2) refuses an existing
// name atomically, so no lock is needed.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	const op = "put-if-absent"
	if err := check(ctx, op, key); err != nil {
		return backend.Attrs{}, err
	}
	tmp, fi, err := s.stage(ctx, op, key, data)
	if err != nil {
		return backend.Attrs{}, err
	}
	defer os.Remove(tmp)
	if err := ctx.Err(); err != nil {
		return backend.Attrs{}, backend.NewError(op, key, backend.KindTransient, err)
	}
	final := s.path(key)
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(errnoOf(err), unix.EEXIST) {
			if st, serr := os.Lstat(final); serr == nil && st.IsDir() {
				return backend.Attrs{}, prefixConflict(op, key)
			}
			return backend.Attrs{}, backend.NewError(op, key, backend.KindPrecondition, errors.New("the key already exists"))
		}
		if errors.Is(errnoOf(err), unix.EPERM) || errors.Is(errnoOf(err), unix.EOPNOTSUPP) {
			return backend.Attrs{}, backend.NewError(op, key, backend.KindConfiguration,
				fmt.Errorf("this filesystem refuses hard links (%v), which conditional create needs; put the store on a filesystem such as ext4, xfs, apfs or tmpfs", errnoOf(err)))
		}
		return backend.Attrs{}, classify(op, key, err)
	}
	if err := syncDir(filepath.Dir(final)); err != nil {
		return backend.Attrs{}, backend.NewError(op, key, backend.KindUnknown, fmt.Errorf("created, but syncing the directory failed: %v", errnoOf(err)))
	}
	return attrs(key, fi), nil
}

// PutIfMatch implements backend.StorageAdapter. The new bytes are staged
// first; the compare and the rename then run under the key's exclusive lock.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, ver string) (backend.Attrs, error) {
	const op = "put-if-match"
	if err := check(ctx, op, key); err != nil {
		return backend.Attrs{}, err
	}
	// Missing is a Precondition failure (also NotFound) without staging
	// anything.
	if _, err := s.Stat(ctx, key); err != nil {
		return backend.Attrs{}, backend.NormalizeMatch(op, key, backend.NewError(op, key, backend.KindOf(err), errors.Unwrap(err)))
	}
	tmp, fi, err := s.stage(ctx, op, key, data)
	if err != nil {
		return backend.Attrs{}, err
	}
	unlock, err := s.lock(ctx, op, key)
	if err != nil {
		os.Remove(tmp)
		return backend.Attrs{}, err
	}
	defer unlock()
	cur, err := os.Stat(s.path(key))
	switch {
	case err != nil:
		os.Remove(tmp)
		return backend.Attrs{}, backend.NormalizeMatch(op, key, classifyRead(op, key, err))
	case !cur.Mode().IsRegular():
		os.Remove(tmp)
		return backend.Attrs{}, backend.MatchMissing(op, key)
	case version(cur) != ver:
		os.Remove(tmp)
		return backend.Attrs{}, backend.NewError(op, key, backend.KindPrecondition, errors.New("the object's version has moved"))
	}
	if afterCompare != nil {
		afterCompare()
	}
	if err := ctx.Err(); err != nil {
		os.Remove(tmp)
		return backend.Attrs{}, backend.NewError(op, key, backend.KindTransient, err)
	}
	if err := s.publishRename(op, key, tmp); err != nil {
		return backend.Attrs{}, err
	}
	return attrs(key, fi), nil
}

// afterCompare, when set by a test, runs between PutIfMatch's compare and its
// rename, widening the window a missing lock would leave open.
var afterCompare func()

// Delete implements backend.StorageAdapter. Emptied parent directories are
// removed up to the root (best effort), because an empty directory is not an
// object and would block a later Put of its name.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := check(ctx, "delete", key); err != nil {
		return err
	}
	// Deleting a missing key is a no-op that takes no lock, so it creates
	// nothing (no store directory, no lock file). A concurrent Put of the key
	// is ordered after this delete.
	if _, err := os.Lstat(s.path(key)); errors.Is(err, os.ErrNotExist) || errors.Is(errnoOf(err), unix.ENOTDIR) {
		return nil
	}
	unlock, err := s.lock(ctx, "delete", key)
	if err != nil {
		return err
	}
	err = unix.Unlink(s.path(key))
	unlock()
	switch {
	case err == nil:
		serr := syncDir(filepath.Dir(s.path(key)))
		s.pruneDirs(key)
		// The unlink took effect in memory; whether it survives a power
		// loss is not known. (A directory that a concurrent delete already
		// emptied and removed took the entry with it: ENOENT is fine.)
		if serr != nil && !errors.Is(errnoOf(serr), unix.ENOENT) {
			return backend.NewError("delete", key, backend.KindUnknown, fmt.Errorf("deleted, but syncing the directory failed: %v", errnoOf(serr)))
		}
		return nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR):
		return nil // missing, or only a prefix: nothing to delete
	}
	return classify("delete", key, err)
}

// pruneDirs removes key's parent directories while they are empty.
func (s *Store) pruneDirs(key string) {
	for dir := filepath.Dir(s.path(key)); dir != s.root && strings.HasPrefix(dir, s.root+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if unix.Rmdir(dir) != nil {
			return
		}
	}
}

// DeletePrefix implements backend.StorageAdapter: list, then delete each key;
// keys that vanish meanwhile count as deleted.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if err := ctx.Err(); err != nil {
		return backend.NewError("delete-prefix", prefix, backend.KindTransient, err)
	}
	if err := backend.ValidatePrefix(prefix); err != nil {
		return err
	}
	var keys []string
	if err := s.walk(ctx, prefix, "", func(key string, _ os.FileInfo) bool {
		keys = append(keys, key)
		return true
	}); err != nil {
		return classify("delete-prefix", prefix, err)
	}
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// lock takes the exclusive flock for key's stripe and returns its release.
// flock conflicts between separate open file descriptions, so goroutines of
// one process exclude each other as well as other processes.
func (s *Store) lock(ctx context.Context, op, key string) (func(), error) {
	h := fnv.New32a()
	h.Write([]byte(key))
	stripe := int(h.Sum32() % lockStripes)
	name := filepath.Join(s.root, lockPrefix+strconv.Itoa(stripe))
	mu := &s.stripes[stripe]
	mu.Lock()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			mu.Unlock()
			return nil, backend.NewError(op, key, backend.KindTransient, err)
		}
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil && errors.Is(err, os.ErrNotExist) {
			if err = s.ensureRoot(op, key); err == nil {
				f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
			}
		}
		if err != nil {
			mu.Unlock()
			return nil, classify(op, key, err)
		}
		if err := flock(ctx, f); err != nil {
			f.Close()
			mu.Unlock()
			return nil, backend.NewError(op, key, backend.KindTransient, err)
		}
		// The file we locked must still be the one at the name; if a sweep
		// removed it, another process may lock a fresh file, so start over.
		held, herr := f.Stat()
		disk, derr := os.Stat(name)
		if herr == nil && derr == nil && os.SameFile(held, disk) {
			return func() {
				unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
				mu.Unlock()
			}, nil
		}
		f.Close()
		if attempt > 100 {
			mu.Unlock()
			return nil, backend.NewError(op, key, backend.KindTransient, errors.New("the lock file keeps disappearing"))
		}
	}
}

// flock blocks until the exclusive lock is held. The kernel call itself
// cannot be cancelled, so it polls with LOCK_NB once the context can end.
func flock(ctx context.Context, f *os.File) error {
	fd := int(f.Fd())
	if ctx.Done() == nil {
		for {
			err := unix.Flock(fd, unix.LOCK_EX)
			if err != unix.EINTR {
				return err
			}
		}
	}
	wait := 50 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if wait < 5*time.Millisecond {
			wait *= 2
		}
	}
}

var _ backend.TempSweeper = (*Store)(nil)

// SweepTemp implements backend.TempSweeper: it removes the staged temp files
// (name#<digits>) under prefix whose modification time (set when the write
// staged them) is before olderThan: residue of writes a crash interrupted
// between staging and publishing. The root's lock files keep their temp
// shape but are left alone: Close removes those no one holds.
func (s *Store) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	res, err := s.sweepTemp(ctx, prefix, olderThan, dryRun)
	return res, true, err
}

func (s *Store) sweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, error) {
	var res backend.TempSwept
	if err := backend.ValidatePrefix(prefix); err != nil {
		return res, err
	}
	start := s.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = filepath.Join(s.root, filepath.FromSlash(prefix[:i]))
	}
	err := filepath.WalkDir(start, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() || !backend.IsTempName(d.Name()) {
			return nil
		}
		rel, rerr := filepath.Rel(s.root, p)
		if rerr != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasPrefix(rel, prefix) || strings.HasPrefix(rel, lockPrefix) {
			return nil
		}
		fi, ierr := d.Info()
		if ierr != nil || !fi.ModTime().Before(olderThan) {
			return nil
		}
		if !dryRun {
			if rmErr := os.Remove(p); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
				return rmErr
			}
		}
		res.Objects++
		res.Bytes += fi.Size()
		return nil
	})
	if err != nil {
		return res, classify("sweep_temp", prefix, err)
	}
	return res, nil
}
