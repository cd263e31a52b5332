package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
)

func init() {
	register(func(a *app) *cobra.Command {
		storage := &cobra.Command{
			Use:   "storage",
			Short: "Inspect a storage location",
		}
		check := &cobra.Command{
			Use:   "check URL",
			Short: "Probe a live store and print which capabilities it really has",
			Long: `Probe a live store, without touching existing data: every key is written
under a fresh temporary prefix (_omnigraph_check/<random>/) that is deleted
at the end. It races 8 conditional creates on one key, races 8
compare-and-swaps (when the store declares them), and checks
list-after-write, ranged reads and deletes. On a local directory it refuses a
directory that does not exist (it creates nothing) and leaves no lock files.
It prints a capability table and
exits 1 when the store lacks a working conditional create, or when a
capability it declares does not hold. Run it before pointing a graph at a
new S3-compatible store.`,
			Args: func(c *cobra.Command, args []string) error {
				if len(args) != 1 {
					return usagef("storage check takes one storage URL, e.g. omnigraph storage check s3://bucket/prefix")
				}
				return nil
			},
			RunE: func(c *cobra.Command, args []string) error {
				return storageCheck(c.Context(), a.stdout, args[0])
			},
		}
		storage.AddCommand(check)
		return storage
	})
}

// checkPrefix holds storage check's temporary probe directories.
const checkPrefix = "_omnigraph_check/"

// checkRaceWriters is the number of concurrent writers in each race.
const checkRaceWriters = 8

// checkRow is one row of the capability table.
type checkRow struct {
	name     string
	declared string // "yes", "no" or "-" (not a declared capability)
	observed string
	// fatal marks a row that makes the check fail.
	fatal bool
}

func checkYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// storageCheck runs every probe against url and prints the table.
func storageCheck(ctx context.Context, out io.Writer, url string) error {
	store, err := backend.Open(ctx, url)
	if err != nil {
		return checkAccessError(url, "open the store", err)
	}
	defer store.Close()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	prefix := checkPrefix + hex.EncodeToString(rnd[:]) + "/"
	s := backend.WithPrefix(store, prefix)
	// clean deletes every probe key; leftKeys lists what it missed.
	clean := func(ctx context.Context) error { return store.DeletePrefix(ctx, prefix) }
	leftKeys := func(ctx context.Context) (int, error) {
		left, err := backend.ListAll(ctx, store, prefix)
		return len(left), err
	}
	if ls, ok := store.(*local.Store); ok {
		// A directory that does not exist is not probed: the check creates
		// nothing where there is nothing (init creates the directory).
		if !ls.RootExists() {
			return exitCodeError{code: exitError, err: errors.New("the directory does not exist; storage check probes an existing location and creates nothing there (omnigraph init creates the directory)")}
		}
		// The local store keeps its lock files in its root: probe a store
		// rooted at the temporary directory, so they go away with it.
		dir := filepath.Join(ls.Root(), filepath.FromSlash(prefix))
		sub, err := local.New(dir)
		if err != nil {
			return err
		}
		s = sub
		clean = func(context.Context) error {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			_ = os.Remove(filepath.Dir(dir)) // the shared parent, when empty
			return nil
		}
		leftKeys = func(context.Context) (int, error) {
			if _, err := os.Stat(dir); err == nil {
				return 1, nil
			}
			return 0, nil
		}
	}
	caps := store.Capabilities()
	fmt.Fprintf(out, "checking %s (temporary prefix %s)\n\n", backend.Redact(url), prefix)

	// One plain write first: a store that refuses it (credentials, bucket)
	// must not be blamed on the capability the first race happens to probe.
	if _, err := s.Put(ctx, "reach", []byte("reach")); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = store.DeletePrefix(cctx, prefix)
		return checkAccessError(url, "write a probe key", err)
	}

	var rows []checkRow
	rows = append(rows, checkCreate(ctx, s, caps))
	rows = append(rows, checkSwap(ctx, s, caps))
	rows = append(rows, checkListAfterWrite(ctx, s))
	rows = append(rows, checkRange(ctx, s))
	rows = append(rows, checkDelete(ctx, s))
	rows = append(rows, checkKeyAndChild(ctx, s, caps))
	rows = append(rows, checkVersionPerWrite(ctx, s, caps))

	// Cleanup runs even when the caller's context is done.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	cleanRow := checkRow{name: "cleanup of probe keys", declared: "-", observed: "yes"}
	if err := clean(cctx); err != nil {
		cleanRow.observed, cleanRow.fatal = "FAILED: "+err.Error(), true
	} else if n, err := leftKeys(cctx); err != nil || n > 0 {
		cleanRow.observed, cleanRow.fatal = fmt.Sprintf("FAILED: %d keys left", n), true
	}
	rows = append(rows, cleanRow)

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "capability\tdeclared\tobserved")
	fmt.Fprintln(tw, "----------\t--------\t--------")
	var broken []string
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.declared, r.observed)
		if r.fatal {
			broken = append(broken, r.name)
		}
	}
	tw.Flush()
	fmt.Fprintln(out)
	if len(broken) > 0 {
		return exitCodeError{code: exitError, err: checkError{code: "storage_check_failed",
			msg: fmt.Sprintf("store check failed: %v; OmniGraph needs a working conditional create, and every declared capability must hold", broken)}}
	}
	fmt.Fprintln(out, "OK: the store has what OmniGraph needs")
	return nil
}

func checkFailed(err error) string {
	return "FAILED: " + err.Error()
}

// checkRace runs n concurrent attempts released together.
func checkRace(n int, attempt func(i int) error) []error {
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := 0; i < n; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			errs[i] = attempt(i)
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// checkOneWinner returns the winner of a race, or an error describing how the
// race went wrong (no winner, two winners, a loser that did not lose with
// Precondition).
func checkOneWinner(errs []error) (int, error) {
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			return -1, fmt.Errorf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, backend.ErrPrecondition):
			return -1, fmt.Errorf("writer %d: %v", i, err)
		}
	}
	if winner < 0 {
		return -1, errors.New("nobody won")
	}
	return winner, nil
}

func checkCreate(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) checkRow {
	p := checkRow{name: "conditional create (put-if-absent)", declared: checkYesNo(caps.ConditionalCreate), fatal: true}
	if !caps.ConditionalCreate {
		p.observed = "absent"
		return p
	}
	payload := func(i int) []byte { return []byte(fmt.Sprintf("writer %d", i)) }
	errs := checkRace(checkRaceWriters, func(i int) error {
		_, err := s.PutIfAbsent(ctx, "create-race", payload(i))
		return err
	})
	w, err := checkOneWinner(errs)
	if err != nil {
		p.observed = fmt.Sprintf("BROKEN: %d-way race: %v", checkRaceWriters, err)
		return p
	}
	got, _, err := s.Get(ctx, "create-race")
	if err != nil {
		p.observed = checkFailed(err)
		return p
	}
	if !bytes.Equal(got, payload(w)) {
		p.observed = "BROKEN: the stored bytes are not the winner's"
		return p
	}
	p.observed, p.fatal = fmt.Sprintf("yes (%d-way race: 1 winner)", checkRaceWriters), false
	return p
}

func checkSwap(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) checkRow {
	p := checkRow{name: "compare-and-swap (put-if-match)", declared: checkYesNo(caps.ConditionalUpdate)}
	a, err := s.Put(ctx, "swap", []byte("start"))
	if err != nil {
		p.observed, p.fatal = checkFailed(err), true
		return p
	}
	if !caps.ConditionalUpdate {
		_, err := s.PutIfMatch(ctx, "swap", []byte("next"), a.Version)
		switch {
		case errors.Is(err, backend.ErrPermanent):
			p.observed = "absent"
		case err == nil:
			p.observed, p.fatal = "BROKEN: undeclared PutIfMatch wrote", true
		default:
			p.observed = "absent (" + err.Error() + ")"
		}
		return p
	}
	p.fatal = true
	payload := func(i int) []byte { return []byte(fmt.Sprintf("swap %d", i)) }
	errs := checkRace(checkRaceWriters, func(i int) error {
		_, err := s.PutIfMatch(ctx, "swap", payload(i), a.Version)
		return err
	})
	w, err := checkOneWinner(errs)
	if err != nil {
		p.observed = fmt.Sprintf("BROKEN: %d-way race: %v", checkRaceWriters, err)
		return p
	}
	got, _, err := s.Get(ctx, "swap")
	if err != nil {
		p.observed = checkFailed(err)
		return p
	}
	if !bytes.Equal(got, payload(w)) {
		p.observed = "BROKEN: the stored bytes are not the winner's"
		return p
	}
	if _, err := s.PutIfMatch(ctx, "swap", []byte("stale"), a.Version); !errors.Is(err, backend.ErrPrecondition) {
		p.observed = fmt.Sprintf("BROKEN: a stale version gave %v, want a precondition failure", err)
		return p
	}
	p.observed, p.fatal = fmt.Sprintf("yes (%d-way race: 1 winner)", checkRaceWriters), false
	return p
}

func checkListAfterWrite(ctx context.Context, s backend.StorageAdapter) checkRow {
	p := checkRow{name: "list after write", declared: "-", fatal: true}
	want := []string{"list/a", "list/b", "list/c"}
	for _, k := range want {
		if _, err := s.Put(ctx, k, []byte(k)); err != nil {
			p.observed = checkFailed(err)
			return p
		}
	}
	page, err := s.List(ctx, "list/", backend.ListOptions{})
	if err != nil {
		p.observed = checkFailed(err)
		return p
	}
	var got []string
	for _, o := range page.Objects {
		got = append(got, o.Key)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		p.observed = fmt.Sprintf("BROKEN: listed %v right after writing %v", got, want)
		return p
	}
	p.observed, p.fatal = "yes", false
	return p
}

func checkRange(ctx context.Context, s backend.StorageAdapter) checkRow {
	p := checkRow{name: "ranged read", declared: "-", fatal: true}
	if _, err := s.Put(ctx, "range", []byte("0123456789")); err != nil {
		p.observed = checkFailed(err)
		return p
	}
	if _, err := s.Put(ctx, "range-empty", nil); err != nil {
		p.observed = checkFailed(err)
		return p
	}
	got, err := s.GetRange(ctx, "range", 2, 3)
	if err != nil || string(got) != "234" {
		p.observed = fmt.Sprintf("BROKEN: bytes 2..4 = %q, %v", got, err)
		return p
	}
	got, err = s.GetRange(ctx, "range-empty", 0, 16)
	if err != nil || len(got) != 0 {
		p.observed = fmt.Sprintf("BROKEN: a range of a zero-byte object = %q, %v", got, err)
		return p
	}
	p.observed, p.fatal = "yes", false
	return p
}

func checkDelete(ctx context.Context, s backend.StorageAdapter) checkRow {
	p := checkRow{name: "delete (idempotent)", declared: "-", fatal: true}
	if _, err := s.Put(ctx, "delete-me", []byte("x")); err != nil {
		p.observed = checkFailed(err)
		return p
	}
	for i := 0; i < 2; i++ {
		if err := s.Delete(ctx, "delete-me"); err != nil {
			p.observed = checkFailed(err)
			return p
		}
	}
	if _, err := s.Stat(ctx, "delete-me"); !errors.Is(err, backend.ErrNotFound) {
		p.observed = fmt.Sprintf("BROKEN: after delete, stat gave %v", err)
		return p
	}
	p.observed, p.fatal = "yes", false
	return p
}

func checkKeyAndChild(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) checkRow {
	p := checkRow{name: "key and key/child coexist", declared: checkYesNo(caps.KeyAndChildCoexist)}
	if _, err := s.Put(ctx, "kc", []byte("parent")); err != nil {
		p.observed, p.fatal = checkFailed(err), true
		return p
	}
	_, err := s.Put(ctx, "kc/child", []byte("child"))
	switch k := backend.KindOf(err); {
	case err == nil:
		p.observed = "yes"
	case k == backend.KindPermanent || k == backend.KindPrecondition:
		p.observed = "no"
		p.fatal = caps.KeyAndChildCoexist
	default:
		p.observed, p.fatal = checkFailed(err), true
	}
	return p
}

func checkVersionPerWrite(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) checkRow {
	p := checkRow{name: "new version per identical write", declared: checkYesNo(caps.VersionPerWrite)}
	a, err := s.Put(ctx, "version", []byte("same"))
	if err != nil {
		p.observed, p.fatal = checkFailed(err), true
		return p
	}
	b, err := s.Put(ctx, "version", []byte("same"))
	if err != nil {
		p.observed, p.fatal = checkFailed(err), true
		return p
	}
	p.observed = checkYesNo(a.Version != b.Version)
	p.fatal = caps.VersionPerWrite && a.Version == b.Version
	return p
}

// checkAccessError explains a store the check could not use at all. An
// authentication failure says so, and names what to set for the URL's
// scheme; anything else is reported as it is, never as a missing capability.
func checkAccessError(url, what string, err error) error {
	msg := backend.Redact(err.Error())
	if !isAuthFailure(err) {
		return checkError{code: errorCode(err, exitError),
			msg: fmt.Sprintf("storage check could not %s, so no capability was probed: %s", what, msg)}
	}
	return checkError{code: "storage_credentials", msg: fmt.Sprintf(
		"storage check could not %s: credentials were refused or missing (%s); set %s and run the check again (see docs/storage.md)",
		what, msg, credentialHint(url))}
}

// authCodes are the error codes and phrases by which the adapters report
// refused or missing credentials.
var authCodes = []string{
	"credentials", "HTTP 401", "HTTP 403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
	"ExpiredToken", "InvalidToken", "AuthorizationHeaderMalformed", "AuthenticationFailed",
	"AuthorizationFailure", "AuthorizationPermissionMismatch", "InvalidAuthenticationInfo",
}

// isAuthFailure reports whether err is a configuration failure that names
// refused or missing credentials.
func isAuthFailure(err error) bool {
	if !errors.Is(err, backend.ErrConfiguration) {
		return false
	}
	m := err.Error()
	for _, c := range authCodes {
		if strings.Contains(m, c) {
			return true
		}
	}
	return false
}

// credentialHint names the environment a store of url's scheme reads its
// credentials from.
func credentialHint(url string) string {
	scheme, _, _ := strings.Cut(url, "://")
	switch strings.TrimPrefix(scheme, "gocloud+") {
	case "s3":
		return "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
	case "gs":
		return "GOOGLE_APPLICATION_CREDENTIALS (or log in with gcloud)"
	case "az", "azblob":
		return "AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN (or AZURE_STORAGE_CONNECTION_STRING)"
	}
	return "the store's credentials"
}
