package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// event is the part of a `go test -json` event (cmd/test2json) read here.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64 // seconds, on pass, fail and skip
}

// timing is one package's or test's wall time and outcome.
type timing struct {
	Package, Test string
	Seconds       float64
	Failed        bool
}

// report holds the finished packages and tests of one run.
type report struct {
	packages, tests []timing
	// unfinished counts packages that started and never ended (a run
	// cut short, or a package that panicked the binary).
	unfinished []string
}

// read takes the events of one run. Lines that are not JSON events (the
// build's own output, when stderr is merged in) are skipped.
func read(in io.Reader) (report, error) {
	var r report
	started := map[string]bool{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Package == "" {
			continue
		}
		switch {
		case e.Action == "start" && e.Test == "":
			started[e.Package] = true
		case (e.Action == "pass" || e.Action == "fail") && e.Test == "":
			delete(started, e.Package)
			r.packages = append(r.packages, timing{Package: e.Package, Seconds: e.Elapsed, Failed: e.Action == "fail"})
		case (e.Action == "pass" || e.Action == "fail") && e.Test != "":
			r.tests = append(r.tests, timing{Package: e.Package, Test: e.Test, Seconds: e.Elapsed, Failed: e.Action == "fail"})
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("read events: %w", err)
	}
	for p := range started {
		r.unfinished = append(r.unfinished, p)
	}
	slices.Sort(r.unfinished)
	return r, nil
}

// slowest returns ts sorted by time, longest first, ties by name.
func slowest(ts []timing) []timing {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b timing) int {
		if c := cmp.Compare(b.Seconds, a.Seconds); c != 0 {
			return c
		}
		return cmp.Compare(a.Package+a.Test, b.Package+b.Test)
	})
	return out
}

// topLevel counts the top-level tests (subtests are inside them).
func topLevel(ts []timing) int {
	n := 0
	for _, t := range ts {
		if !strings.Contains(t.Test, "/") {
			n++
		}
	}
	return n
}

func (r report) print(w io.Writer, top int) {
	fmt.Fprintf(w, "%d packages, %d tests (%d with subtests)\n\npackage wall times, longest first:\n",
		len(r.packages), topLevel(r.tests), len(r.tests))
	for _, p := range slowest(r.packages) {
		fmt.Fprintf(w, "%8.1fs %s%s\n", p.Seconds, p.Package, failMark(p.Failed))
	}
	fmt.Fprintf(w, "\nthe %d slowest tests:\n", min(top, len(r.tests)))
	for _, t := range slowest(r.tests)[:min(top, len(r.tests))] {
		fmt.Fprintf(w, "%8.1fs %s %s%s\n", t.Seconds, t.Package, t.Test, failMark(t.Failed))
	}
	for _, p := range r.unfinished {
		fmt.Fprintf(w, "unfinished: %s\n", p)
	}
}

func failMark(failed bool) string {
	if failed {
		return " FAIL"
	}
	return ""
}
