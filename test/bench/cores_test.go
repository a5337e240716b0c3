package bench

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// BENCH_SPLIT_CORES=1 runs the served measure with the proxy apart from
// the control plane, as in a cluster where Traefik runs on nodes other
// than the API server's: Traefik and the bench's own process (the outside
// client, the floors' writers) on the first half of the CPUs, and
// kube-apiserver, etcd and the manager on the other half. Every flip runs
// on the same pinning, so the ratios stay side by side; what changes is
// that the API server's work (the statuses, the events) no longer takes
// the proxy's CPU (docs/benchmarks.md, "Served flips through Traefik").

// coreSplit is the two halves of the CPUs.
type coreSplit struct {
	proxy, control unix.CPUSet
}

// newCoreSplit splits the CPUs this process may use in two halves.
func newCoreSplit() (*coreSplit, error) {
	all, err := affinity(0)
	if err != nil {
		return nil, err
	}
	return halves(all)
}

// halves splits all in two: the lower half of its CPUs for the proxy,
// the rest for the control plane. It needs two CPUs at least.
func halves(all unix.CPUSet) (*coreSplit, error) {
	var cpus []int
	for cpu := 0; len(cpus) < all.Count(); cpu++ {
		if all.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	if len(cpus) < 2 {
		return nil, fmt.Errorf("BENCH_SPLIT_CORES needs two CPUs at least, this process has %d", len(cpus))
	}
	s := &coreSplit{}
	for i, cpu := range cpus {
		if i < len(cpus)/2 {
			s.proxy.Set(cpu)
		} else {
			s.control.Set(cpu)
		}
	}
	return s, nil
}

// pin sets the CPUs of every thread of process pid. A thread started
// while it runs inherits the set of the thread that started it, so it
// passes over the threads again until a pass finds none it had not
// pinned.
func pin(pid int, set *unix.CPUSet) error {
	pinned := map[int]bool{}
	for {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return err
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || pinned[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("pinning thread %d of process %d: %w", tid, pid, err)
			}
			pinned[tid], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
}

// affinity is the CPUs process pid's main thread may use.
func affinity(pid int) (unix.CPUSet, error) {
	var set unix.CPUSet
	err := unix.SchedGetaffinity(pid, &set)
	return set, err
}

// pinAll pins each process of pids to set.
func pinAll(set *unix.CPUSet, pids ...int) error {
	for _, pid := range pids {
		if err := pin(pid, set); err != nil {
			return err
		}
	}
	return nil
}

// pinApart pins the proxy's processes to split.proxy and the control
// plane's to split.control. The returned function gives each process the
// CPUs it had before, and tells the bench's progress when it cannot; it
// is to be called whatever the error.
func pinApart(b *bench, split *coreSplit, proxy, control []int) (func(), error) {
	before := map[int]unix.CPUSet{}
	for _, pid := range append(slices.Clone(proxy), control...) {
		set, err := affinity(pid)
		if err != nil {
			return func() {}, err
		}
		before[pid] = set
	}
	restore := func() {
		for pid, set := range before {
			if err := pin(pid, &set); err != nil && !errors.Is(err, os.ErrNotExist) {
				b.progress("BENCH_SPLIT_CORES: giving process %d its CPUs back: %v", pid, err)
			}
		}
	}
	if err := pinAll(&split.proxy, proxy...); err != nil {
		return restore, err
	}
	return restore, pinAll(&split.control, control...)
}
