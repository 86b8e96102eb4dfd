// Command testtimes reads the events of `go test -json` and prints where
// the suite's time went: every package's wall time, longest first, and the
// slowest tests (top-level tests and subtests, by their own elapsed time).
//
//	go test -json ./... > test.json; testtimes -top 20 test.json
//	make test-times
//
// A package or test that failed is marked FAIL. The figures are wall
// times: packages run side by side (go test -p), so they add up to more
// than the run took.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	top := flag.Int("top", 20, "how many of the slowest tests to print")
	flag.Parse()
	in := io.Reader(os.Stdin)
	if flag.NArg() > 0 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	}
	r, err := read(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(2)
	}
	r.print(os.Stdout, *top)
}
