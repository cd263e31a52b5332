package gq_test

import (
	"fmt"
	"time"

	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

func Example() {
	cat, err := pg.Compile(`
node Person { handle: String @key  name: String  age: I32? }
edge Knows: Person -> Person
`)
	if err != nil {
		panic(err)
	}
	prog, err := gq.Compile(`
query friends($h: String, $min: I32) {
  match {
    $me: Person { handle: $h }
    $me knows{1,2} $f
    $f.age >= $min
  }
  return { $f.name, $f.age }
  order { $f.age desc }
  limit 10
}`, cat)
	if err != nil {
		panic(err)
	}
	plan, _ := prog.Plan("friends")
	args, err := gq.BindAt(plan, map[string]any{"h": "ada", "min": 30.0}, time.Unix(0, 0))
	if err != nil {
		panic(err)
	}
	fmt.Print(plan)
	fmt.Println(args.Values["h"], args.Values["min"])
	// Output:
	// query friends($h: String, $min: I32)
	// read
	//   scan $me Person key($h) where $me.handle = $h
	//   expand $me out Knows{1,2} -> $f Person
	//   filter $f.age >= $min
	//   column f.name String = $f.name
	//   column f.age I32? = $f.age
	//   order f.age desc, id($me), id($f)
	//   limit 10
	// ada 30
}
