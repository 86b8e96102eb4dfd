package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// make test's set-up installs Debian's kubernetes-client when kubectl is
// missing, non-interactively and with no service allowed to start during
// the install, and does nothing at all when kubectl is there.
func TestEnsureKubectlInstallsOnlyWhenMissing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the script installs as root (CI and the project's machines run as root); this test expects no sudo")
	}
	dir := t.TempDir()
	kubectl := filepath.Join(dir, "usr", "bin", "kubectl")
	policy := filepath.Join(dir, "policy-rc.d")
	log := filepath.Join(dir, "apt.log")
	bin := t.TempDir()
	// apt-get logs each call with the frontend and the policy in force, and
	// installing kubernetes-client creates the binary, as the package does.
	aptGet := `#!/bin/sh
echo "apt-get $* frontend=$DEBIAN_FRONTEND policy=$(cat "` + policy + `" 2>/dev/null | tr '\n' ' ')" >> "` + log + `"
for a in "$@"; do
	if [ "$a" = kubernetes-client ]; then mkdir -p "$(dirname "` + kubectl + `")" && printf '#!/bin/sh\n' > "` + kubectl + `" && chmod 755 "` + kubectl + `"; fi
done
`
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(aptGet), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() string {
		t.Helper()
		cmd := exec.Command("bash", "../scripts/ensure-kubectl.sh")
		// The frontend must come from the script, not from this environment.
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "DEBIAN_FRONTEND=") })
		cmd.Env = append(env, "ENSURE_KUBECTL="+kubectl, "ENSURE_POLICY_RC="+policy,
			"PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ensure-kubectl.sh: %v\n%s", err, out)
		}
		return string(out)
	}

	out := run()
	calls, _ := os.ReadFile(log)
	install := ""
	for _, line := range strings.Split(string(calls), "\n") {
		if strings.Contains(line, "apt-get install") {
			install = line
		}
	}
	if !strings.Contains(install, " kubernetes-client ") {
		t.Fatalf("with kubectl missing the script did not install kubernetes-client; calls:\n%s", calls)
	}
	if !strings.Contains(install, "frontend=noninteractive") || !strings.Contains(install, "policy=#!/bin/sh exit 101") {
		t.Fatalf("the install ran without the noninteractive frontend or the policy that refuses service starts: %s", install)
	}
	if _, err := os.Stat(policy); !os.IsNotExist(err) {
		t.Fatalf("the policy file is left behind after the install (%v)", err)
	}
	if !strings.Contains(out, "installing") {
		t.Fatalf("the first run installed silently; it printed %q", out)
	}

	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if out := run(); out != "" {
		t.Fatalf("with kubectl present the script printed %q", out)
	}
	if calls, err := os.ReadFile(log); err == nil {
		t.Fatalf("with kubectl present the script called:\n%s", calls)
	}
}
