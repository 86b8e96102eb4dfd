package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The committed codecs are what the generator writes from the committed
// declarations: a payload field added or changed without go generate
// fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	const dir = "../.."
	want, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := generatedFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, src := range want {
		names = append(names, name)
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("topics/%s is not what the declarations generate: run go generate ./topics/...", name)
		}
	}
	for _, name := range committed {
		if !slices.Contains(names, name) {
			t.Errorf("topics/%s has no marked type left: run go generate ./topics/...", name)
		}
	}
}

// run writes the files generate returns and removes generated files with
// no marked type left, leaving the other files alone.
func TestRunReplacesGeneratedFiles(t *testing.T) {
	out := t.TempDir()
	stale := filepath.Join(out, "gone_json.go")
	mine := filepath.Join(out, "mine_json.go")
	if err := os.WriteFile(stale, []byte(header+"\npackage topics\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("package topics\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run("../..", out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale generated file kept: %v", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a hand-written file was removed: %v", err)
	}
	got, err := generatedFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := generatedFiles("../.."); !slices.Equal(got, want) {
		t.Errorf("wrote %v, want %v", got, want)
	}
}

// The generated code of every shape of field in testdata/payloads.go,
// compiled with the package's hand-written helpers, writes json.Marshal's
// bytes and reads as json.Unmarshal reads (testdata/payloads_test.go).
func TestGeneratedCodeOfEveryShape(t *testing.T) {
	dir := t.TempDir()
	copies := map[string]string{
		"../../append.go": "append.go", "../../scan.go": "scan.go",
		"testdata/payloads.go": "payloads.go", "testdata/payloads_test.go": "payloads_test.go",
	}
	for from, to := range copies {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.test/topics\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, dir); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		src, _ := os.ReadFile(filepath.Join(dir, "payloads_json.go"))
		t.Fatalf("%v\n%s\ngenerated:\n%s", err, out, src)
	}
}

// A field the generator cannot encode exactly is refused, naming it.
func TestUnsupportedFieldsAreRefused(t *testing.T) {
	for _, decl := range []string{
		"Price float64 `json:\"price\"`",
		"Raw json.RawMessage `json:\"raw\"`",
		"Blob []byte `json:\"blob\"`",
		"Set map[string]int `json:\"set\"`",
		"Any any `json:\"any\"`",
		"Quoted int `json:\"quoted,string\"`",
		"Inner `json:\"inner\"`",
	} {
		dir := t.TempDir()
		src := "package topics\n\ntype Inner struct{ A int }\n\n//topics:appendjson\ntype P struct {\n\tOK int\n\t" + decl + "\n}\n"
		if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := generate(dir)
		if err == nil || !strings.Contains(err.Error(), "P.") && !strings.Contains(err.Error(), "P:") {
			t.Errorf("%s: error %v, want one naming the field", decl, err)
		}
	}
}
