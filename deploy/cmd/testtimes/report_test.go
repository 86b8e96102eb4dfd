package main

import (
	"strings"
	"testing"
)

// The report orders packages and tests by time, counts top-level tests
// apart from subtests, marks failures, skips non-JSON lines and names a
// package that never ended.
func TestReportOrdersByTimeAndMarksFailures(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"a"}`,
		`{"Action":"start","Package":"b"}`,
		`{"Action":"start","Package":"c"}`,
		`# a build line`,
		`{"Action":"pass","Package":"a","Test":"TestQuick","Elapsed":0.5}`,
		`{"Action":"pass","Package":"a","Test":"TestSlow/sub","Elapsed":7}`,
		`{"Action":"fail","Package":"a","Test":"TestSlow","Elapsed":8}`,
		`{"Action":"fail","Package":"a","Elapsed":9.25}`,
		`{"Action":"pass","Package":"b","Test":"TestB","Elapsed":3}`,
		`{"Action":"pass","Package":"b","Elapsed":30}`,
	}, "\n")
	r, err := read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.print(&out, 2)
	want := `2 packages, 3 tests (4 with subtests)

package wall times, longest first:
    30.0s b
     9.2s a FAIL

the 2 slowest tests:
     8.0s a TestSlow FAIL
     7.0s a TestSlow/sub
unfinished: c
`
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
}
