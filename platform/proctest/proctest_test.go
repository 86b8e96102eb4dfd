package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds a package once per test binary and set of tags: a second
// call, from the same test or another, returns the same file untouched,
// the binary runs, a build with a tag is a binary of its own;
// RemoveBuilds takes the files away.
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
	loud := Build(t, "./testdata/hello", "loud")
	if loud == first {
		t.Fatal("the build with a tag took the path of the build without")
	}
	if out, err := exec.Command(loud).Output(); err != nil || string(out) != "HELLO FROM A BUILT BINARY\n" {
		t.Fatalf("running the tagged build: %q, %v", out, err)
	}
	RemoveBuilds()
	if _, err := os.Stat(filepath.Dir(first)); !os.IsNotExist(err) {
		t.Errorf("the build directory is still there: %v", err)
	}
}
