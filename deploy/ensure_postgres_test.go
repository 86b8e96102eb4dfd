package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeAPT puts apt-get and pg_conftool on a PATH of their own: apt-get logs
// each call to log and, asked to install the postgresql package, creates
// the server binary where server says, as Debian's package would.
func fakeAPT(t *testing.T, log, server string) string {
	t.Helper()
	bin := t.TempDir()
	scripts := map[string]string{
		"apt-get": `#!/bin/sh
echo "apt-get $*" >> "` + log + `"
for a in "$@"; do
	if [ "$a" = postgresql ]; then mkdir -p "$(dirname "` + server + `")" && touch "` + server + `"; fi
done
`,
		"pg_conftool": "#!/bin/sh\necho \"pg_conftool $*\" >> \"" + log + "\"\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// make run's set-up installs the PostgreSQL server package when the server
// binaries are missing (and only the server: the package's own cluster is
// turned off first), and does nothing at all when they are there.
func TestEnsurePostgresInstallsOnlyWhenMissing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the script installs as root (CI and the project's machines run as root); this test expects no sudo")
	}
	dir := t.TempDir()
	server := filepath.Join(dir, "lib", "15", "bin", "postgres")
	log := filepath.Join(dir, "apt.log")
	run := func() string {
		t.Helper()
		cmd := exec.Command("bash", "../scripts/ensure-postgres.sh")
		cmd.Env = append(os.Environ(),
			"ENSURE_POSTGRES_GLOB="+filepath.Join(dir, "lib", "*", "bin", "postgres"),
			"PATH="+fakeAPT(t, log, server)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ensure-postgres.sh: %v\n%s", err, out)
		}
		return string(out)
	}

	out := run()
	calls, _ := os.ReadFile(log)
	if !strings.Contains(string(calls), "apt-get install") || !strings.Contains(string(calls), " postgresql\n") {
		t.Fatalf("with no server binaries the script did not install postgresql; calls:\n%s", calls)
	}
	if !strings.Contains(string(calls), "create_main_cluster false") {
		t.Fatalf("the package's main cluster was not turned off before installing; calls:\n%s", calls)
	}
	if !strings.Contains(out, "installing") {
		t.Fatalf("the first run installed silently; it printed %q", out)
	}
	if _, err := os.Stat(server); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if out := run(); out != "" {
		t.Fatalf("with the binaries present the script printed %q", out)
	}
	if calls, err := os.ReadFile(log); err == nil {
		t.Fatalf("with the binaries present the script called:\n%s", calls)
	}
}
