package clusterlock_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// Leased-lock tests with two real processes on the cloud emulators, lease
// 2 s (heartbeat 0.67 s, lapse 1.33 s, takeover after 3 s of silence). They
// skip without the emulators (fail in CI) and bound every wait by a hang
// guard many times the expected time; they assert outcomes, never elapsed
// time.

// emuStore says how to reach one emulator, directly and through a proxy.
type emuStore struct {
	url func(t testing.TB) string
	// proxied starts a proxy in front of the emulator and returns the
	// environment that points a driver at it.
	proxied func(t *testing.T) (*testenv.Proxy, []string)
}

var s3Emu = emuStore{
	url: testenv.S3,
	proxied: func(t *testing.T) (*testenv.Proxy, []string) {
		target := os.Getenv("AWS_ENDPOINT_URL_S3")
		if target == "" {
			target = os.Getenv("AWS_ENDPOINT_URL")
		}
		p := testenv.NewProxy(t, target)
		return p, []string{"AWS_ENDPOINT_URL_S3=" + p.URL, "AWS_ENDPOINT_URL=" + p.URL}
	},
}

var gcsEmu = emuStore{
	url: testenv.GCS,
	proxied: func(t *testing.T) (*testenv.Proxy, []string) {
		target := os.Getenv("STORAGE_EMULATOR_HOST")
		if !strings.Contains(target, "://") {
			target = "http://" + target
		}
		p := testenv.NewProxy(t, target)
		p.Host = strings.TrimPrefix(strings.TrimPrefix(target, "http://"), "https://")
		return p, []string{"STORAGE_EMULATOR_HOST=" + p.HostPort}
	},
}

// TestLeasedTwoProcessesS3 runs the leased-lock protocol between two
// driver processes on the S3 emulator.
func TestLeasedTwoProcessesS3(t *testing.T) { leasedTwoProcesses(t, s3Emu) }

// TestLeasedTwoProcessesGCS is the same on the GCS emulator.
func TestLeasedTwoProcessesGCS(t *testing.T) { leasedTwoProcesses(t, gcsEmu) }

const lease2s = envLease + "=2"

func leasedTwoProcesses(t *testing.T, emu emuStore) {
	// takeover_after_silence: the owner is killed; a starter takes over
	// once its heartbeats have been silent for a lease and a half.
	t.Run("takeover_after_silence", func(t *testing.T) {
		url := emu.url(t)
		a := startChild(t, "serve", url, lease2s)
		idA := strings.Fields(a.expect(t, "LEASED", "ERROR", "HELD"))[1]
		a.expect(t, "ACK")
		if err := a.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		a.wait(t)
		b := startChild(t, "serve", url, lease2s)
		line := b.expect(t, "LEASED", "ERROR", "HELD")
		if !strings.HasPrefix(line, "LEASED") {
			t.Fatalf("starter after the owner was killed: %s", line)
		}
		idB := strings.Fields(line)[1]
		if idB == idA {
			t.Fatal("the successor reused the old lock id")
		}
		rec := readRecord(t, url)
		if rec.LockID != idB || rec.LeaseSeconds != 2 {
			t.Errorf("record after takeover = %+v", rec)
		}
		_ = b.stdin.Close()
		if code := b.wait(t); code != 0 {
			t.Errorf("successor's clean shutdown exited %d", code)
		}
	})

	// refuse_while_heartbeats_continue: a second server is refused with
	// state_lock_held while the owner heartbeats.
	t.Run("refuse_while_heartbeats_continue", func(t *testing.T) {
		url := emu.url(t)
		a := startChild(t, "serve", url, lease2s)
		idA := strings.Fields(a.expect(t, "LEASED", "ERROR", "HELD"))[1]
		b := startChild(t, "serve", url, lease2s)
		line := b.expect(t, "LEASED", "ERROR", "HELD")
		if f := strings.Fields(line); f[0] != "HELD" || f[1] != idA || f[2] != "true" {
			t.Fatalf("starter against a live owner: %s", line)
		}
		if code := b.wait(t); code != exitHeld {
			t.Errorf("refused starter exited %d, want %d", code, exitHeld)
		}
		if rec := readRecord(t, url); rec.LockID != idA {
			t.Errorf("record = %+v", rec)
		}
		_ = a.stdin.Close()
		if code := a.wait(t); code != 0 {
			t.Errorf("owner's clean shutdown exited %d", code)
		}
	})

	// owner_stops_when_heartbeats_cut: the proxy cuts the owner's traffic;
	// it exits 2 without releasing; a successor takes over; every write the
	// owner acknowledged is present.
	t.Run("owner_stops_when_heartbeats_cut", func(t *testing.T) {
		url := emu.url(t)
		p, env := emu.proxied(t)
		a := startChild(t, "serve", url, append(env, lease2s)...)
		a.expect(t, "LEASED", "ERROR", "HELD")
		var acked []string
		for len(acked) < 3 {
			acked = append(acked, strings.Fields(a.expect(t, "ACK"))[1])
		}
		p.Arm(testenv.Rule{Times: 1 << 30, Status: 503})
		for l := range a.lines {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "ACK" {
				acked = append(acked, f[1])
			}
		}
		if code := a.wait(t); code != exitLost {
			t.Fatalf("owner with its heartbeats cut exited %d, want %d", code, exitLost)
		}
		b := startChild(t, "serve", url, lease2s)
		if line := b.expect(t, "LEASED", "ERROR", "HELD"); !strings.HasPrefix(line, "LEASED") {
			t.Fatalf("successor: %s", line)
		}
		s := testenv.Open(t, url)
		for _, key := range acked {
			if ok, err := s.Exists(context.Background(), key); err != nil || !ok {
				t.Errorf("acknowledged write %s lost across the takeover (%v)", key, err)
			}
		}
		_ = b.stdin.Close()
		b.wait(t)
	})
}

func readRecord(t *testing.T, url string) clusterlock.Record {
	t.Helper()
	s := testenv.Open(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := clusterlock.Status(ctx, s, clusterlock.Options{})
	if err != nil {
		t.Fatalf("status: %v", backend.KindOf(err))
	}
	return st.Holder
}
