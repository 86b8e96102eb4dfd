package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds a package once per test binary: a second call, from the
// same test or another, returns the same file untouched, and the binary
// runs; RemoveBuilds takes the files away.
func TestBuildBuildsEachPackageOnce(t *testing.T) {
	first := Build(t, "./testdata/hello")
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	var again string
	t.Run("another test", func(t *testing.T) { again = Build(t, "testdata/hello") })
	if again != first {
		t.Fatalf("second build at %s, the first at %s", again, first)
	}
	after, err := os.Stat(again)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Error("the binary was built again")
	}
	out, err := exec.Command(first).Output()
	if err != nil || string(out) != "hello from a built binary\n" {
		t.Fatalf("running it: %q, %v", out, err)
	}
	RemoveBuilds()
	if _, err := os.Stat(filepath.Dir(first)); !os.IsNotExist(err) {
		t.Errorf("the build directory is still there: %v", err)
	}
}
