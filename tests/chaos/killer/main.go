// Command killer is the chaos run's process-tree watcher (tests/chaos):
// it SIGKILLs a random fraction of the runc-userns processes that one
// containerd's shims start, each after a random delay, so that creates,
// deletes and kills die anywhere, not only at the fault points of the
// faults build. It watches the production binary as the shims run it:
// nothing in the binary knows it is watched.
//
// A process is the wrapper's when /proc/<pid>/exe is the -wrapper file
// (an exec'd pass-through is runc by then, and left alone), and it is
// this run's when a process above it names -marker (the containerd
// socket, on its shim's command line): other suites' wrappers on the same
// host are never touched. The process is held by a pidfd from the moment
// it is picked: a PID reused by then gets no signal (ESRCH).
//
// Picks and delays come from -seed in the order the processes are seen;
// which call is running when a delay ends depends on timing, so a replay
// makes the same decisions, not the same kills. On SIGTERM it writes to
// -count the kills that landed, the processes picked (a pick whose
// process exited or exec'd runc before its delay ended lands nowhere)
// and the wrapper processes seen, on one line, and exits.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	wrapper := flag.String("wrapper", "", "the runc-userns binary the shims run")
	marker := flag.String("marker", "", "a string on the command line of an ancestor (the containerd socket)")
	seed := flag.Int64("seed", 1, "seed of the picks and delays")
	fraction := flag.Float64("fraction", 0.1, "fraction of the wrapper processes to kill")
	maxDelay := flag.Duration("max-delay", 150*time.Millisecond, "longest delay before a kill")
	logPath := flag.String("log", "", "a line for each kill")
	countPath := flag.String("count", "", "the number of kills, written on SIGTERM")
	flag.Parse()
	self, err := os.Stat(*wrapper)
	if err != nil || *marker == "" || *logPath == "" || *countPath == "" {
		fmt.Fprintf(os.Stderr, "killer: -wrapper (%v), -marker, -log and -count are needed\n", err)
		os.Exit(2)
	}
	logf, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "killer:", err)
		os.Exit(2)
	}
	w := &watcher{wrapper: self, marker: []byte(*marker), rng: rand.New(rand.NewSource(*seed)),
		fraction: *fraction, maxDelay: *maxDelay, log: logf, seen: map[string]bool{}}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(2 * time.Millisecond)
	for {
		select {
		case <-stop:
			w.wg.Wait()
			if err := os.WriteFile(*countPath, []byte(fmt.Sprintf("%d %d %d\n", w.kills.Load(), w.picked, w.wrappers)), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "killer:", err)
				os.Exit(1)
			}
			return
		case <-tick.C:
			w.scan()
		}
	}
}

type watcher struct {
	wrapper  os.FileInfo
	marker   []byte
	rng      *rand.Rand
	fraction float64
	maxDelay time.Duration
	log      *os.File
	mu       sync.Mutex // log
	seen     map[string]bool
	kills    atomic.Int64
	picked   int // scan's alone
	wrappers int
	wg       sync.WaitGroup
}

// scan looks at every process once (by PID and start time).
func (w *watcher) scan() {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		ppid, start, ok := stat(pid)
		if !ok {
			continue
		}
		key := n + "/" + start
		if w.seen[key] {
			continue
		}
		w.seen[key] = true
		if !w.isWrapper(pid) || !w.ours(ppid) {
			continue
		}
		// Every wrapper process draws, killed or not: the sequence of
		// draws is the seed's.
		w.wrappers++
		kill := w.rng.Float64() < w.fraction
		delay := time.Duration(w.rng.Int63n(int64(w.maxDelay) + 1))
		if !kill {
			continue
		}
		w.picked++
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		args := cmdline(pid)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer unix.Close(fd)
			time.Sleep(delay)
			// Still the wrapper (not a pass-through exec'd into runc);
			// the pidfd makes sure the PID is still that process.
			if !w.isWrapper(pid) {
				return
			}
			if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
				return
			}
			w.kills.Add(1)
			w.mu.Lock()
			fmt.Fprintf(w.log, "%s kill pid %d after %s: %s\n", time.Now().Format("15:04:05.000"), pid, delay.Round(time.Millisecond), args)
			w.mu.Unlock()
		}()
	}
}

func (w *watcher) isWrapper(pid int) bool {
	st, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && os.SameFile(st, w.wrapper)
}

// ours: a process above pid (its parent, a shim, or further up) names the
// marker.
func (w *watcher) ours(ppid int) bool {
	for i := 0; i < 8 && ppid > 1; i++ {
		if bytes.Contains([]byte(cmdline(ppid)), w.marker) {
			return true
		}
		next, _, ok := stat(ppid)
		if !ok {
			return false
		}
		ppid = next
	}
	return false
}

// stat returns a process's parent and start time (/proc/<pid>/stat fields
// 4 and 22).
func stat(pid int) (ppid int, start string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[19], err == nil
}

func cmdline(pid int) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})))
}
