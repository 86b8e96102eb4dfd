package devpostgres

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// clusterUser is the OS user a root process runs the cluster as; Debian's
// postgresql packages create it.
const clusterUser = "postgres"

// owner is the OS identity that owns the data area and runs initdb and
// postgres. PostgreSQL refuses to run as root, so a root process hands the
// cluster to the postgres user; anyone else runs it as themselves.
type owner struct {
	name string
	cred *syscall.Credential // nil: the current user
}

func currentOwner() (owner, error) {
	if os.Geteuid() != 0 {
		return owner{name: "the current user"}, nil
	}
	u, err := user.Lookup(clusterUser)
	if err != nil {
		return owner{}, fmt.Errorf("look up OS user %s (postgres cannot run as root): %w", clusterUser, err)
	}
	uid, errU := strconv.ParseUint(u.Uid, 10, 32)
	gid, errG := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(errU, errG); err != nil {
		return owner{}, fmt.Errorf("look up OS user %s: %w", clusterUser, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return owner{name: clusterUser, cred: cred}, nil
}

// chown hands path to the owner; a no-op when we are the owner.
func (o owner) chown(path string) error {
	if o.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(o.cred.Uid), int(o.cred.Gid)); err != nil {
		return fmt.Errorf("chown %s to %s: %w", path, o.name, err)
	}
	return nil
}

// mkdirOwned creates dir (mode 0700) and hands it to the owner. The parents
// get 0755 so that the owner can reach dir through them.
func (o owner) mkdirOwned(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return o.chown(dir)
}

// checkTraversable fails early, with a message that says what to change,
// when the owner cannot reach dir: initdb's own error would be obscure.
func (o owner) checkTraversable(dir string) error {
	if o.cred == nil {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("check data dir path: %w", err)
		}
		if !o.canSearch(info) {
			return fmt.Errorf("check data dir path: OS user %s cannot enter %s (mode %v); "+
				"make it world-searchable (chmod o+x) or put DataDir elsewhere", o.name, p, info.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// canSearch applies the kernel's owner/group/other rule for the execute bit.
// Only the primary group counts: Credential without Groups drops the others.
func (o owner) canSearch(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := info.Mode().Perm()
	switch {
	case st.Uid == o.cred.Uid:
		return perm&0o100 != 0
	case st.Gid == o.cred.Gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
