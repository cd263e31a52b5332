package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/backend"
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
under a fresh temporary prefix (_omnigraph_check/<random>/), and exactly the
keys written are deleted at the end. It runs the conformance suite's live
rules (put-if-absent races and claims with 16 writers x 150 rounds, create
racing delete, 17 MiB conditional writes, compare-and-swap races and a
counter when the store declares them, list after write/overwrite/delete,
ranged reads, deletes), printing one line per rule, then the capabilities
it detects, and ends with the verdict on "is a graph safe here?": full
read-write with leased locks, read-write with unleased locks only (both
exit 0), read-only or unusable (exit 1). 'omnigraph init' reaches the same
verdict (with smaller races) and refuses what this calls read-only or
unusable. A wrong declaration of a capability the engine never uses (key
and key/child coexisting, a new version per identical write) is a warning
that names what to change, not a failure. On a local directory it refuses
a directory that does not exist (it creates nothing) and leaves no lock
files. Run it before pointing a graph at a new S3-compatible store.`,
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

// storageCheck runs the survey against url and prints it.
func storageCheck(ctx context.Context, out io.Writer, url string, asJSON bool) error {
	store, err := backend.Open(ctx, url)
	if err != nil {
		return checkAccessError(url, "open the store", err)
	}
	defer store.Close()
	if !asJSON {
		fmt.Fprintf(out, "checking %s (temporary prefix %s<random>/)\n\n", backend.Redact(url), checkPrefix)
	}
	sv, err := storeVerdict(ctx, url, store, checkScope)
	if err != nil {
		return err
	}
	if asJSON {
		if err := writeJSON(out, checkReportOf(url, sv)); err != nil {
			return err
		}
	} else {
		printCheck(out, sv)
	}
	if !sv.Verdict.Usable {
		return exitCodeError{code: exitError, err: checkError{code: "storage_check_failed", msg: "store check failed: " + sv.Verdict.Text}}
	}
	return nil
}

// printCheck writes the rule and capability tables and the verdict.
func printCheck(out io.Writer, sv *conformance.Survey) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "rule\tresult\tdetail")
	fmt.Fprintln(tw, "----\t------\t------")
	for _, r := range sv.Rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Result, r.Detail)
	}
	tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "capability\tdeclared\tobserved")
	fmt.Fprintln(tw, "----------\t--------\t--------")
	for _, r := range sv.Declarations {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Declared, r.Observed)
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, w := range sv.Verdict.Warnings {
		fmt.Fprintln(out, "warning: "+w)
	}
	fmt.Fprintln(out, "verdict: "+sv.Verdict.Text)
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
	// Warnings are wrong declarations of capabilities the engine does not
	// need: they say what to change and never make a store unusable.
	Warnings []string `json:"warnings"`
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
	Warning  string `json:"warning,omitempty"`
}

func checkReportOf(url string, sv *conformance.Survey) checkReport {
	v := sv.Verdict
	r := checkReport{URL: backend.Redact(url), Verdict: v.Text, Mode: v.Mode, Usable: v.Usable,
		Rules: []checkReportRule{}, Capabilities: []checkReportCap{}, Warnings: append([]string{}, v.Warnings...)}
	for _, x := range sv.Rules {
		r.Rules = append(r.Rules, checkReportRule{Name: x.Name, Result: strings.ToLower(x.Result), Detail: x.Detail})
	}
	for _, x := range sv.Declarations {
		r.Capabilities = append(r.Capabilities, checkReportCap{Name: x.Name, Declared: x.Declared, Observed: x.Observed, OK: !x.Broken, Warning: x.Warning})
	}
	return r
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
