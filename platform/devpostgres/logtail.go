package devpostgres

import (
	"io"
	"os"
	"strings"
)

// logTailBytes bounds how much of the server log goes into an error: enough
// for the FATAL line and its context.
const logTailBytes = 2048

// logTail returns the end of the server log, so that an error about a failed
// start carries the reason without a trip to the file.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > logTailBytes {
		_, _ = f.Seek(-logTailBytes, io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	text := string(data)
	if i := strings.IndexByte(text, '\n'); i >= 0 && len(data) == logTailBytes {
		text = text[i+1:] // drop the partial first line
	}
	return "postgres log (" + path + "):\n" + strings.TrimRight(text, "\n")
}
