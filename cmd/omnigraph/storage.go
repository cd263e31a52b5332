package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func init() {
	register(func(a *app) *cobra.Command {
		var asJSON bool
		storage := &cobra.Command{
			Use:   "storage",
			Short: "Inspect a storage location",
		}
		check := &cobra.Command{
			Use:   "check URL",
			Short: "Probe a live store and print which capabilities it really has",
			Long: `Probe a live store, without touching existing data: every key is written
under a fresh temporary prefix (_omnigraph_check/<random>/) that is deleted
at the end. It runs the conformance suite's live rules (put-if-absent races
and claims with 16 writers x 150 rounds, create racing delete,
compare-and-swap races and a counter when the store declares them, list after
write/overwrite/delete, ranged reads, deletes), printing one line per rule,
then the capabilities it detects, and ends with a verdict: full read-write
with leased locks, read-write with unleased locks only (both exit 0),
read-only or unusable (exit 1). On a local directory it refuses a directory
that does not exist (it creates nothing) and leaves no lock files. Run it
before pointing a graph at a new S3-compatible store.`,
			Args: func(c *cobra.Command, args []string) error {
				if len(args) != 1 {
					return usagef("storage check takes one storage URL, e.g. omnigraph storage check s3://bucket/prefix")
				}
				return nil
			},
			RunE: func(c *cobra.Command, args []string) error {
				return storageCheck(c.Context(), a.stdout, args[0], asJSON)
			},
		}
		check.Flags().BoolVar(&asJSON, "json", false, "print one JSON document (rules, capabilities, verdict) instead of tables")
		storage.AddCommand(check)
		return storage
	})
}

// checkPrefix holds storage check's temporary probe directories.
const checkPrefix = "_omnigraph_check/"

// storageCheck runs every probe against url and prints the table.
func storageCheck(ctx context.Context, out io.Writer, url string, asJSON bool) error {
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
	if !asJSON {
		fmt.Fprintf(out, "checking %s (temporary prefix %s)\n\n", backend.Redact(url), prefix)
	}

	// One plain write first: a store that refuses it (credentials, bucket)
	// must not be blamed on the capability the first race happens to probe.
	if _, err := s.Put(ctx, "reach", []byte("reach")); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = store.DeletePrefix(cctx, prefix)
		return checkAccessError(url, "write a probe key", err)
	}

	results := runCheckProbes(ctx, s, caps)
	detected := []checkRow{checkUndeclaredSwap(ctx, s, caps), checkKeyAndChild(ctx, s, caps), checkVersionPerWrite(ctx, s, caps)}

	// Cleanup runs even when the caller's context is done.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	cleanRow := checkRow{name: "cleanup of probe keys", declared: "-", observed: "yes"}
	if err := clean(cctx); err != nil {
		cleanRow.observed, cleanRow.fatal = "FAILED: "+err.Error(), true
	} else if n, err := leftKeys(cctx); err != nil || n > 0 {
		cleanRow.observed, cleanRow.fatal = fmt.Sprintf("FAILED: %d keys left", n), true
	}
	detected = append(detected, cleanRow)

	var broken []string
	for _, r := range detected {
		if r.fatal {
			broken = append(broken, r.name)
		}
	}
	v := checkVerdictOf(caps, results, broken)
	if asJSON {
		if err := writeJSON(out, checkReportOf(url, results, detected, v)); err != nil {
			return err
		}
	} else {
		printCheck(out, results, detected, v)
	}
	if !v.usable {
		return exitCodeError{code: exitError, err: checkError{code: "storage_check_failed", msg: "store check failed: " + v.text}}
	}
	return nil
}

// printCheck writes the rule and capability tables and the verdict.
func printCheck(out io.Writer, results []checkResult, detected []checkRow, v checkVerdict) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "rule\tresult\tdetail")
	fmt.Fprintln(tw, "----\t------\t------")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.result, r.detail)
	}
	tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "capability\tdeclared\tobserved")
	fmt.Fprintln(tw, "----------\t--------\t--------")
	for _, r := range detected {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.declared, r.observed)
	}
	tw.Flush()
	fmt.Fprintln(out)
	fmt.Fprintln(out, "verdict: "+v.text)
}

// checkReport is storage check's --json document. Its field names are
// part of the CLI's contract (docs/cli.md).
type checkReport struct {
	URL          string            `json:"url"`
	Rules        []checkReportRule `json:"rules"`
	Capabilities []checkReportCap  `json:"capabilities"`
	Verdict      string            `json:"verdict"`
	// Mode is full, unleased, read_only or unusable.
	Mode   string `json:"mode"`
	Usable bool   `json:"usable"`
}

type checkReportRule struct {
	Name   string `json:"name"`
	Result string `json:"result"` // ok, failed, skipped
	Detail string `json:"detail,omitempty"`
}

type checkReportCap struct {
	Name     string `json:"name"`
	Declared string `json:"declared"`
	Observed string `json:"observed"`
	OK       bool   `json:"ok"`
}

func checkReportOf(url string, results []checkResult, detected []checkRow, v checkVerdict) checkReport {
	r := checkReport{URL: backend.Redact(url), Verdict: v.text, Mode: v.mode, Usable: v.usable,
		Rules: []checkReportRule{}, Capabilities: []checkReportCap{}}
	for _, x := range results {
		r.Rules = append(r.Rules, checkReportRule{Name: x.name, Result: strings.ToLower(x.result), Detail: x.detail})
	}
	for _, x := range detected {
		r.Capabilities = append(r.Capabilities, checkReportCap{Name: x.name, Declared: x.declared, Observed: x.observed, OK: !x.fatal})
	}
	return r
}

// Race sizes of storage check. A server that lets two concurrent creates
// both win in a fraction p of rounds escapes PutIfAbsentRace alone with
// probability (1-p)^checkRounds: for p = 1/20 that is 0.95^150 < 0.05%, and
// PutIfAbsentClaims (2×checkRounds contested keys) and
// PutIfAbsentRacingDelete give it more chances to show.
const (
	checkWriters = 16
	checkRounds  = 150
	checkBudget  = 3 * time.Minute
)

// checkResult is one rule's line.
type checkResult struct {
	name   string
	needs  conformance.Needs
	result string // ok, FAILED, skipped
	detail string
}

// runCheckProbes runs the conformance suite's live probes (the same code
// conformance.Run runs) against s.
func runCheckProbes(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) []checkResult {
	o := conformance.Options{Writers: checkWriters, Rounds: checkRounds, RaceBudget: checkBudget}
	var out []checkResult
	for _, p := range conformance.Probes() {
		r := checkResult{name: p.Name, needs: p.Needs}
		if reason := p.Needs.SkipReason(caps); reason != "" {
			r.result, r.detail = "skipped", reason
			out = append(out, r)
			continue
		}
		rep, err := p.Check(ctx, s, o)
		switch {
		case err != nil:
			r.result, r.detail = "FAILED", backend.Redact(err.Error())
		default:
			r.result, r.detail = "ok", rep.Note
		}
		out = append(out, r)
	}
	return out
}

// checkVerdict is what the engine can do on the store.
type checkVerdict struct {
	text string
	// mode is full, unleased, read_only or unusable (the --json "mode").
	mode   string
	usable bool
}

// checkVerdictOf: full read-write when conditional create and update both
// hold; read-write with unleased locks only when create holds and update is
// not declared; read-only when conditional create is absent or does not
// hold; unusable when a basic rule or a declared capability fails.
func checkVerdictOf(caps backend.Capabilities, results []checkResult, broken []string) checkVerdict {
	var basic, create, update []string
	for _, r := range results {
		if r.result != "FAILED" {
			continue
		}
		switch r.needs {
		case conformance.NeedsConditionalCreate:
			create = append(create, r.name)
		case conformance.NeedsConditionalUpdate:
			update = append(update, r.name)
		default:
			basic = append(basic, r.name)
		}
	}
	basic = append(basic, broken...)
	switch {
	case len(basic) > 0:
		return checkVerdict{mode: "unusable", text: fmt.Sprintf("unusable: %s failed", strings.Join(basic, ", "))}
	case !caps.ConditionalCreate:
		return checkVerdict{mode: "read_only", text: "read-only: the store has no conditional create, so writers cannot be fenced and the engine refuses writes here"}
	case len(create) > 0:
		return checkVerdict{mode: "read_only", text: fmt.Sprintf("read-only: the store declares conditional create but it does not fence concurrent writers (%s failed); the engine must not write here", strings.Join(create, ", "))}
	case caps.ConditionalUpdate && len(update) > 0:
		return checkVerdict{mode: "unusable", text: fmt.Sprintf("unusable: the store declares conditional update but it does not hold (%s failed); leased locks would not be safe", strings.Join(update, ", "))}
	case !caps.ConditionalUpdate:
		return checkVerdict{mode: "unleased", text: "read-write with unleased locks only: conditional create holds, conditional update is not available", usable: true}
	}
	return checkVerdict{mode: "full", text: "full read-write with leased server locks: conditional create and conditional update hold", usable: true}
}

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

func checkFailed(err error) string {
	return "FAILED: " + err.Error()
}

// checkUndeclaredSwap: a store that does not declare conditional update
// must refuse PutIfMatch rather than write.
func checkUndeclaredSwap(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) checkRow {
	p := checkRow{name: "compare-and-swap (put-if-match)", declared: checkYesNo(caps.ConditionalUpdate)}
	if caps.ConditionalUpdate {
		p.observed = "see the rules above"
		return p
	}
	a, err := s.Put(ctx, "swap", []byte("start"))
	if err != nil {
		p.observed, p.fatal = checkFailed(err), true
		return p
	}
	_, err = s.PutIfMatch(ctx, "swap", []byte("next"), a.Version)
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
		if caps.KeyAndChildCoexist {
			p.observed += " (the store refuses k beside k/child: declare it false, e.g. ?key_child_coexist=false)"
			p.fatal = true
		}
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
