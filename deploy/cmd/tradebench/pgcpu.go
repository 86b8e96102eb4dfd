package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// postgresCPU is the CPU time the stack's private Postgres server has used
// so far: the postmaster with the backends that have exited, and every
// live backend. ok is false when it cannot be read (an external
// DATABASE_URL, or no /proc).
func postgresCPU(dataDir string) (cpu time.Duration, ok bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postgres", "cluster", "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return 0, false
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process has exited
		}
		st, err := parseStat(string(b))
		if err != nil {
			continue
		}
		switch {
		case st.pid == postmaster:
			cpu += st.own + st.children
			ok = true
		case st.ppid == postmaster:
			cpu += st.own
		}
	}
	return cpu, ok
}

// kafkaCPU is the CPU time the stack's Apache Kafka nodes (EMBEDDED_KAFKA
// apache) have used so far, read through the pid files kraft writes. ok
// is false when there are none (kfake runs in this process and counts in
// its CPU, an external KAFKA_BROKERS counts nowhere).
func kafkaCPU(dataDir, glob string) (cpu time.Duration, ok bool) {
	files, _ := filepath.Glob(filepath.Join(dataDir, glob))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		b, err = os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/stat")
		if err != nil {
			continue // the node has exited
		}
		if st, err := parseStat(string(b)); err == nil {
			cpu += st.own
			ok = true
		}
	}
	return cpu, ok
}

// processesCPU is the CPU time the processes pids and their children
// (nginx's workers) have used so far.
func processesCPU(pids []int) time.Duration {
	if len(pids) == 0 {
		return 0
	}
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	var cpu time.Duration
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process has exited
		}
		if st, err := parseStat(string(b)); err == nil && (want[st.pid] || want[st.ppid]) {
			cpu += st.own
		}
	}
	return cpu
}

// procStat is what postgresCPU reads of /proc/<pid>/stat.
type procStat struct {
	pid, ppid     int
	own, children time.Duration // utime+stime; cutime+cstime of waited-for children
}

// parseStat reads a /proc/<pid>/stat line. The command name, in
// parentheses, may hold spaces and parentheses, so the fields are counted
// from the last ')'.
func parseStat(line string) (procStat, error) {
	var st procStat
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return st, fmt.Errorf("stat %q: no command name", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return st, fmt.Errorf("stat pid: %w", err)
	}
	// Fields from 3 (state) on; utime is field 14, so index 11 here.
	f := strings.Fields(line[end+1:])
	if len(f) < 15 {
		return st, fmt.Errorf("stat of %d: %d fields after the name", pid, len(f))
	}
	n := make([]int64, 4)
	for i := range n {
		if n[i], err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return st, fmt.Errorf("stat of %d: %w", pid, err)
		}
	}
	st.pid = pid
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return st, fmt.Errorf("stat of %d: %w", pid, err)
	}
	st.own = time.Duration(n[0]+n[1]) * clockTick
	st.children = time.Duration(n[2]+n[3]) * clockTick
	return st, nil
}
