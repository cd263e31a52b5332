// Command testreport reads `go test -json` output on stdin, prints failures
// and a closing "N passed, N failed, N skipped" line, and fails when a test in
// the must-not-skip list skipped or did not run (enforced when CI is set or
// -strict is given).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	mustNotSkip := flag.String("must-not-skip", "", "file listing tests (Package.TestName or TestName/sub) that must run and pass")
	strict := flag.Bool("strict", os.Getenv("CI") != "", "treat a skipped or missing must-not-skip test as a failure")
	flag.Parse()
	os.Exit(report(os.Stdin, os.Stdout, *mustNotSkip, *strict))
}

func report(in io.Reader, out io.Writer, listFile string, strict bool) int {
	type key struct{ pkg, test string }
	outputs := map[key][]string{}
	result := map[key]string{}
	var pkgFail []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			fmt.Fprintln(out, string(line)) // build errors arrive as plain text
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			if len(outputs[k]) < 400 {
				outputs[k] = append(outputs[k], e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				if e.Action == "fail" {
					pkgFail = append(pkgFail, e.Package)
				}
				continue
			}
			result[k] = e.Action
		}
	}
	var passed, failed, skipped int
	var failures []key
	for k, r := range result {
		switch r {
		case "pass":
			passed++
		case "fail":
			failed++
			failures = append(failures, k)
		case "skip":
			skipped++
		}
	}
	sort.Slice(failures, func(i, j int) bool { return failures[i].pkg+failures[i].test < failures[j].pkg+failures[j].test })
	for _, k := range failures {
		fmt.Fprintf(out, "--- FAIL: %s %s\n", k.pkg, k.test)
		for _, o := range outputs[k] {
			fmt.Fprint(out, "    ", o)
		}
	}
	for _, p := range pkgFail {
		fmt.Fprintf(out, "--- FAIL (package): %s\n", p)
		for _, o := range outputs[key{p, ""}] {
			fmt.Fprint(out, "    ", o)
		}
	}
	for k, r := range result {
		if r == "skip" {
			msg := ""
			for _, o := range outputs[k] {
				if strings.Contains(o, ".go:") {
					msg = strings.TrimSpace(o)
				}
			}
			fmt.Fprintf(out, "skipped: %s %s %s\n", k.pkg, k.test, msg)
		}
	}
	code := 0
	if failed > 0 || len(pkgFail) > 0 {
		code = 1
	}
	if listFile != "" {
		data, err := os.ReadFile(listFile)
		if err != nil {
			fmt.Fprintln(out, "testreport:", err)
			return 1
		}
		for _, want := range strings.Split(string(data), "\n") {
			want = strings.TrimSpace(want)
			if want == "" || strings.HasPrefix(want, "#") {
				continue
			}
			pkg, test, _ := strings.Cut(want, " ")
			r, ok := result[key{pkg, test}]
			if ok && r == "pass" {
				continue
			}
			state := "did not run"
			if ok {
				state = r
			}
			fmt.Fprintf(out, "must-not-skip: %s %s %s\n", pkg, test, state)
			if strict {
				code = 1
			}
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return code
}
