package devpostgres

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is what we read from postmaster.pid: the lines are documented in
// PostgreSQL's miscadmin.h (LOCK_FILE_LINE_*).
type lockFile struct {
	pid    int
	shmID  int    // System V segment that interlocks the data directory; -1 if none
	status string // "starting", "stopping", "ready" or "standby"
}

// clearStaleLock handles a postmaster.pid left by an earlier run, so that a
// start after a crash or kill -9 just works:
//   - the server is gone: wait until its orphaned backends have detached from
//     its shared memory (postgres refuses to start before), then remove the
//     file, because its pid may since belong to an unrelated process;
//   - the server is alive but orphaned or already stopping (its parent died
//     and the parent-death signal is taking it down): ask for a fast shutdown
//     and wait for it to exit;
//   - the server is alive and owned by a running process: an error, since
//     another program is using this data directory right now.
func clearStaleLock(ctx context.Context, l layout) error {
	lock, err := readLockFile(l.pidFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check stale lock: %w", err)
	}
	if isPostmasterOf(lock.pid, l.cluster()) {
		if lock.status != "stopping" && parentPid(lock.pid) != 1 {
			return fmt.Errorf("check stale lock: the cluster in %s is in use by postgres pid %d", l.cluster(), lock.pid)
		}
		if err := stopOrphan(ctx, lock.pid); err != nil {
			return fmt.Errorf("check stale lock: %w", err)
		}
	}
	if err := waitDetached(ctx, lock.shmID); err != nil {
		return fmt.Errorf("check stale lock: %w", err)
	}
	if err := os.Remove(l.pidFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check stale lock: %w", err)
	}
	return nil
}

func readLockFile(path string) (lockFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return lockFile{}, err
	}
	lines := strings.Split(string(data), "\n")
	line := func(n int) string { // 1-based, as in miscadmin.h
		if n > len(lines) {
			return ""
		}
		return strings.TrimSpace(lines[n-1])
	}
	lock := lockFile{shmID: -1, status: line(8)}
	lock.pid, _ = strconv.Atoi(line(1)) // a torn file reads as pid 0: no process to wait for
	if f := strings.Fields(line(7)); len(f) == 2 {
		if id, err := strconv.Atoi(f[1]); err == nil {
			lock.shmID = id
		}
	}
	return lock, nil
}

// isPostmasterOf reports whether pid is a live postgres server started on
// clusterDir. Pids are reused, so a live pid alone proves nothing.
func isPostmasterOf(pid int, clusterDir string) bool {
	if pid <= 0 {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if filepath.Base(args[0]) != "postgres" {
		return false
	}
	for i, arg := range args {
		if arg == "-D" && i+1 < len(args) && args[i+1] == clusterDir {
			return true
		}
	}
	return false
}

// parentPid returns the parent of pid from /proc/<pid>/stat, or 0.
func parentPid(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name in parentheses may contain spaces; fields after it are plain.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	fields := strings.Fields(rest) // state, ppid, ...
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// stopOrphan asks an orphaned server for a fast shutdown and waits until the
// process is gone.
func stopOrphan(ctx context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop orphaned postgres pid %d: %w", pid, err)
	}
	return poll(ctx, func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
}

// waitDetached waits until no process is attached to the shared memory
// segment of a dead server. Its backends notice the postmaster's death and
// exit on their own, within moments.
func waitDetached(ctx context.Context, shmID int) error {
	if shmID < 0 {
		return nil
	}
	return poll(ctx, func() bool { return shmAttachments(shmID) == 0 })
}

// shmAttachments returns the nattch column of /proc/sysvipc/shm for the
// segment, 0 when the segment is gone.
func shmAttachments(shmID int) int {
	f, err := os.Open("/proc/sysvipc/shm")
	if err != nil {
		return 0
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		// key shmid perms size cpid lpid nattch ...
		fields := strings.Fields(scanner.Text())
		if len(fields) < 7 || fields[1] != strconv.Itoa(shmID) {
			continue
		}
		n, _ := strconv.Atoi(fields[6])
		return n
	}
	return 0
}
