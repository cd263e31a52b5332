package client_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/client"
)

// omnigraphBin is the real CLI, built once for the package's tests (or
// the one OMNIGRAPH_TEST_BIN names): the client is tested against
// 'omnigraph serve' as users run it.
var omnigraphBin string

func TestMain(m *testing.M) {
	// make test builds the binary once for every step that runs it.
	if bin := os.Getenv("OMNIGRAPH_TEST_BIN"); bin != "" {
		omnigraphBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "omnigraph-client-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	omnigraphBin = filepath.Join(dir, "omnigraph")
	build := exec.Command("go", "build", "-o", omnigraphBin, "github.com/omnigraph-go/omnigraph/cmd/omnigraph")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the omnigraph binary:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// og runs the CLI and returns its stdout; a failure fails the test.
func og(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(omnigraphBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("omnigraph %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// exampleGraph initialises url with examples/social.pg and loads
// examples/social.jsonl.
func exampleGraph(t *testing.T, url string) string {
	t.Helper()
	og(t, "init", "--schema", "../examples/social.pg", url)
	og(t, "load", "--data", "../examples/social.jsonl", "--mode", "append", url)
	return url
}

// server is one 'omnigraph serve' process.
type server struct {
	base   string
	cmd    *exec.Cmd
	exited chan int
	stderr *strings.Builder
}

// serve starts 'omnigraph serve' with args (and extra environment) and
// returns once it listens; it is killed when the test ends.
func serve(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(omnigraphBin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, exited: make(chan int, 1), stderr: &strings.Builder{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "OMNIGRAPH_LISTEN_ADDR="); ok {
				addr <- a
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			s.exited <- ee.ExitCode()
			return
		}
		s.exited <- 0
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case a := <-addr:
		s.base = "http://" + a
		return s
	case code := <-s.exited:
		t.Fatalf("serve exited %d before serving:\n%s", code, s.stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve did not start:\n%s", s.stderr)
	}
	return nil
}

// wait returns the server's exit code.
func (s *server) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-s.exited:
		return code
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server did not exit:\n%s", s.stderr)
	}
	return -1
}

// tokens makes a tokens file with one token per actor and returns the
// file and the secrets.
func tokens(t *testing.T, actors ...string) (string, map[string]string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens.json")
	secrets := map[string]string{}
	for _, a := range actors {
		secrets[a] = strings.TrimSpace(og(t, "token", "add", a, "--tokens", file))
	}
	return file, secrets
}

func newClient(t *testing.T, base, token string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(base, append([]client.Option{client.WithToken(token)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
