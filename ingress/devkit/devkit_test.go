package devkit_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"blockspace.exchange/ingress/devkit"
	"blockspace.exchange/platform/auth"
)

// TestLoadOrCreateSigningKey: the first call makes the key and its
// directory readable by the owner only; later calls read the same key and
// leave the file as it was.
func TestLoadOrCreateSigningKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "keys")
	path := filepath.Join(dir, "access-token-es256.pem")
	first, err := devkit.LoadOrCreateSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700 | os.ModeDir} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%s mode %v, want %v", p, st.Mode(), want)
		}
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if parsed, err := auth.ParsePrivateKey(written); err != nil || !parsed.Equal(first) {
		t.Fatalf("the file does not hold the returned key: %v", err)
	}

	second, err := devkit.LoadOrCreateSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Equal(first) {
		t.Fatal("the second call returned another key")
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, written) {
		t.Fatal("the second call rewrote the key file")
	}

	// A damaged key file is an error, never silently replaced: tokens
	// signed before would stop verifying.
	if err := os.WriteFile(path, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := devkit.LoadOrCreateSigningKey(path); err == nil {
		t.Fatal("a damaged key file was accepted")
	}
	if again, _ := os.ReadFile(path); string(again) != "damaged" {
		t.Fatal("a damaged key file was overwritten")
	}
}
