// Command jsonappend writes the reflection-free JSON codecs of the topics
// package from its struct declarations, so that a payload field is
// declared once, with its json tag, and its encoders and fast decoders
// follow.
//
// A type whose doc comment holds the line
//
//	//topics:appendjson
//
// gets an AppendJSON(dst []byte) []byte method that appends exactly the
// bytes json.Marshal writes for it, and a type marked
//
//	//topics:readjson
//
// gets a ReadJSON(data []byte) bool method that reads the plain form its
// producers write and declines (false) anything it does not read exactly
// as json.Unmarshal would. The methods of the types of x.go go to
// x_json.go. Run it from the package's directory, as go generate does:
//
//	go run ./internal/jsonappend
//
// The field sequences are generated; the helpers they call
// (appendStringField, the scanner, ...) are hand-written in the package.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", ".", "directory of the package to read")
	out := flag.String("out", "", "directory to write the generated files to (default: -dir)")
	flag.Parse()
	if *out == "" {
		*out = *dir
	}
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "jsonappend:", err)
		os.Exit(1)
	}
}

// run generates the codecs of the package in dir into out, and removes
// the generated files of out that no longer have a type to hold.
func run(dir, out string) error {
	files, err := generate(dir)
	if err != nil {
		return err
	}
	stale, err := generatedFiles(out)
	if err != nil {
		return err
	}
	for _, name := range stale {
		if _, keep := files[name]; !keep {
			if err := os.Remove(filepath.Join(out, name)); err != nil {
				return err
			}
		}
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(out, name), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}
