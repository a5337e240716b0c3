package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a program the demo or the e2e suite runs beside the cluster,
// such as the manager binary, with its output in a log file.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts path with args, writing its output to logPath.
func StartProcess(logPath, path string, args ...string) (*Process, error) {
	return StartProcessWith(ProcessOptions{}, logPath, path, args...)
}

// ProcessOptions say how StartProcessWith runs a program, for example as
// a container runtime would run an image's entrypoint.
type ProcessOptions struct {
	// Dir is the working directory; empty means ours.
	Dir string
	// Env is the whole environment; nil means ours.
	Env []string
	// Credential is the user and groups to run as; nil means ours.
	Credential *syscall.Credential
}

// StartProcessWith starts path with args as opts say, writing its output
// to logPath.
func StartProcessWith(opts ProcessOptions, logPath, path string, args ...string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir, cmd.Env = opts.Dir, opts.Env
	// The process dies with us, even when we are killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: opts.Credential}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop asks the process to end with SIGTERM and kills it after grace.
func (p *Process) Stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill ends the process at once with SIGKILL, as a crash would.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Err is how the process ended: nil for exit status 0. It waits for the
// process to end.
func (p *Process) Err() error {
	<-p.done
	return p.err
}
