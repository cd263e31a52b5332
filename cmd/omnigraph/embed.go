package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/index/embed"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

func init() {
	register(func(a *app) *cobra.Command {
		var input, output, specPath, schemaPath string
		var clean, reembedAll, asJSON bool
		var types, selects []string
		c := &cobra.Command{
			Use:   "embed --input IN.jsonl --output OUT.jsonl (--schema F.pg | --spec SPEC.json) [--clean | --reembed-all] [--type T]... [--select [T:]field=value]...",
			Short: "Fill the vectors of a load file offline (local: no graph is opened)",
			Long: "Copy a load file, filling the Vector field of each node line whose vector is missing\n" +
				"(absent, null or []) with an embedding of its text, as the original's 'embed' does.\n" +
				"--schema takes the fields from the schema's @embed(\"source\") properties; --spec takes\n" +
				"the original's spec JSON {\"dimension\": N, \"types\": {\"T\": {\"target\": \"v\", \"fields\": [..]}}}.\n" +
				"The text of a line is \"type: T\" then \"field: value\" per non-empty field, one per line.\n" +
				"--reembed-all embeds every selected line; --select re-embeds only the lines it matches;\n" +
				"--clean removes the vector fields instead. The embedder is the one queries use\n" +
				"(OMNIGRAPH_EMBED_PROVIDER; unset: the built-in deterministic one, offline).\n" +
				"The output is written to OUT.tmp and renamed over OUT when complete.",
			Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				if input == "" || output == "" {
					return usagef("give --input and --output")
				}
				if (specPath == "") == (schemaPath == "") {
					return usagef("give exactly one of --schema F.pg and --spec SPEC.json")
				}
				if clean && reembedAll {
					return usagef("--clean and --reembed-all exclude each other")
				}
				if input == output {
					return usagef("--output must differ from --input")
				}
				var spec *embed.Spec
				if schemaPath != "" {
					src, err := os.ReadFile(schemaPath)
					if err != nil {
						return fmt.Errorf("reading the schema: %w", err)
					}
					cat, err := pg.Compile(string(src))
					if err != nil {
						return err
					}
					if spec, err = embed.SpecFromCatalog(cat); err != nil {
						return err
					}
				} else {
					raw, err := os.ReadFile(specPath)
					if err != nil {
						return fmt.Errorf("reading the spec: %w", err)
					}
					spec = &embed.Spec{}
					// Not strict: the original's spec files may carry more.
					if err := json.Unmarshal(raw, spec); err != nil || spec.Dimension < 1 || len(spec.Types) == 0 {
						return usagef("--spec %s is not an embed spec: it must be JSON {\"dimension\": N >= 1, \"types\": {\"T\": {\"target\": \"vector field\", \"fields\": [\"text field\", ...]}}}", specPath)
					}
				}
				job := embed.Job{Spec: spec, Mode: embed.FillMissing, Types: types, Select: selects}
				var e embed.Embedder
				switch {
				case clean:
					job.Mode = embed.Clean
				case reembedAll:
					job.Mode = embed.ReembedAll
				}
				if !clean {
					var err error
					if e, err = embed.FromEnv(os.Getenv); err != nil {
						return err
					}
				}
				in, err := os.Open(input)
				if err != nil {
					return fmt.Errorf("reading the input: %w", err)
				}
				defer in.Close()
				out, err := createAtomic(output, 0o644)
				if err != nil {
					return fmt.Errorf("writing the output: %w", err)
				}
				defer out.Abort()
				sum, err := embed.FillJSONL(c.Context(), in, out, job, e)
				if err != nil {
					return err
				}
				if err := out.Commit(); err != nil {
					return fmt.Errorf("writing the output: %w", err)
				}
				if asJSON {
					return writeJSON(a.stdout, struct {
						Input  string `json:"input"`
						Output string `json:"output"`
						*embed.Summary
					}{input, output, sum})
				}
				fmt.Fprintf(a.stdout, "%s: %d records, %d selected, %d embedded, %d cleaned (%s", output, sum.Records, sum.Selected, sum.Embedded, sum.Cleaned, sum.Mode)
				if sum.Model != "" {
					fmt.Fprintf(a.stdout, ", model %s", sum.Model)
				}
				fmt.Fprintln(a.stdout, ")")
				return nil
			},
		}
		f := c.Flags()
		f.StringVar(&input, "input", "", "load file to read")
		f.StringVar(&output, "output", "", "load file to write")
		f.StringVar(&schemaPath, "schema", "", "schema whose @embed properties name the vectors and their source fields")
		f.StringVar(&specPath, "spec", "", "the original's embed spec JSON")
		f.BoolVar(&clean, "clean", false, "remove the vector fields")
		f.BoolVar(&reembedAll, "reembed-all", false, "embed every selected line, also those with a vector")
		f.StringArrayVar(&types, "type", nil, "only lines of this type (repeatable)")
		f.StringArrayVar(&selects, "select", nil, "only lines whose field has this value, [Type:]field=value (repeatable); re-embeds them")
		f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
		return c
	})
}
