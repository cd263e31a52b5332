package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// writeString is the write function of these tests: what export or blob get
// would stream.
func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// TestWriteOutputFIFO: a FIFO given as --out is written, not replaced; its
// reader gets the bytes and the FIFO is still there.
func TestWriteOutputFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A second name for the FIFO, so a failing run (the FIFO renamed over)
	// can still release the reader blocked in open.
	keep := filepath.Join(dir, "pipe.keep")
	if err := os.Link(fifo, keep); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(keep)
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- b
	}()
	err := writeOutput(fifo, nil, writeString("through the pipe\n"))
	if err != nil {
		t.Fatalf("writeOutput to a FIFO: %v", err)
	}
	fi, err := os.Lstat(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeNamedPipe == 0 {
		// Release the reader through the other name before failing.
		if w, err := os.OpenFile(keep, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("the FIFO became %v: it was replaced, not written", fi.Mode())
	}
	select {
	case b := <-got:
		if string(b) != "through the pipe\n" {
			t.Fatalf("the reader got %q", b)
		}
	case <-time.After(time.Minute):
		t.Fatal("the reader got nothing in a minute")
	}
}

// TestWriteOutputDescriptor: /dev/fd/N (what a shell's >(cmd) passes) and
// /proc/self/fd/N are opened as the descriptor they name.
func TestWriteOutputDescriptor(t *testing.T) {
	for _, prefix := range []string{"/dev/fd/", "/proc/self/fd/"} {
		t.Run(prefix, func(t *testing.T) {
			if _, err := os.Stat(prefix); err != nil {
				t.Skipf("no %s here: %v", prefix, err)
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(r)
				got <- b
			}()
			path := prefix + strconv.Itoa(int(w.Fd()))
			err = writeOutput(path, nil, writeString("via a descriptor\n"))
			w.Close()
			if err != nil {
				t.Fatalf("writeOutput(%s): %v", path, err)
			}
			if b := <-got; string(b) != "via a descriptor\n" {
				t.Fatalf("the pipe's reader got %q", b)
			}
		})
	}
}

// TestWriteOutputDescriptorOfAFile: a descriptor redirected to a regular
// file (as `--out /dev/stdout >>file`) is appended to, not truncated, and
// the file is not replaced by a new one.
func TestWriteOutputDescriptorOfAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(file, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, _ := os.Stat(file)
	path := "/dev/fd/" + strconv.Itoa(int(f.Fd()))
	if err := writeOutput(path, nil, writeString("after\n")); err != nil {
		t.Fatalf("writeOutput(%s): %v", path, err)
	}
	after, _ := os.Stat(file)
	if !os.SameFile(before, after) {
		t.Fatal("the file behind the descriptor was replaced by a new one")
	}
	if b, _ := os.ReadFile(file); string(b) != "before\nafter\n" {
		t.Fatalf("the file holds %q", b)
	}
}

// TestWriteOutputSymlink: a symlink stays a symlink and its target gets the
// new bytes (also when the target does not exist yet, and through a chain of
// relative links).
func TestWriteOutputSymlink(t *testing.T) {
	cases := []struct {
		name   string
		exists bool
		chain  bool
	}{
		{name: "to a file", exists: true},
		{name: "dangling", exists: false},
		{name: "chain of relative links", exists: true, chain: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sub := filepath.Join(dir, "data")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(sub, "real.jsonl")
			if tc.exists {
				if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			link := filepath.Join(dir, "out.jsonl")
			if err := os.Symlink("data/real.jsonl", link); err != nil {
				t.Fatal(err)
			}
			out := link
			if tc.chain {
				out = filepath.Join(dir, "outer")
				if err := os.Symlink("out.jsonl", out); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeOutput(out, nil, writeString("new\n")); err != nil {
				t.Fatalf("writeOutput through a symlink: %v", err)
			}
			for _, l := range []string{link, out} {
				fi, err := os.Lstat(l)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode()&fs.ModeSymlink == 0 {
					t.Fatalf("%s is no longer a symlink (%v): it was replaced", filepath.Base(l), fi.Mode())
				}
			}
			if b, err := os.ReadFile(target); err != nil || string(b) != "new\n" {
				t.Fatalf("the link's target holds %q (%v), want the new bytes", b, err)
			}
			noTemps(t, dir)
			noTemps(t, sub)
		})
	}
}

// TestWriteOutputKeepsMode: an existing file keeps its permission bits; a
// new one is 0600.
func TestWriteOutputKeepsMode(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "shared.jsonl")
	if err := os.WriteFile(existing, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(existing, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeOutput(existing, nil, writeString("new\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(existing); fi.Mode().Perm() != 0o644 {
		t.Fatalf("the existing file's mode became %v, want 0644 kept", fi.Mode().Perm())
	}
	fresh := filepath.Join(dir, "fresh.jsonl")
	if err := writeOutput(fresh, nil, writeString("x")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o600 {
		t.Fatalf("a new file's mode is %v, want 0600", fi.Mode().Perm())
	}
}

// TestWriteOutputRegularFailureKeepsFile: a regular file is still replaced
// only once the write completes; a failed write leaves it as it was.
func TestWriteOutputRegularFailureKeepsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("read failed")
	err := writeOutput(file, nil, func(w io.Writer) error {
		io.WriteString(w, "part")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the write's error", err)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, []byte("old\n")) {
		t.Fatalf("the file holds %q after a failed write", b)
	}
	noTemps(t, dir)
	if err := writeOutput(dir, nil, writeString("x")); err == nil {
		t.Fatal("a directory as --out was accepted")
	}
}
