package controlplane

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Kubectl runs the project's kubectl against a kubeconfig, from the
// repository root (so that paths like config/samples work).
type Kubectl struct {
	Kubeconfig string
	// PluginDir, when set, is put first on kubectl's PATH, so that
	// `kubectl dynamic` runs the kubectl-dynamic binary in it.
	PluginDir string
}

// Command returns the kubectl command, reading stdin when it is not empty.
func (k Kubectl) Command(stdin string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(AssetsDir(), "kubectl"), args...)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.Kubeconfig)
	if k.PluginDir != "" {
		cmd.Env = append(cmd.Env, "PATH="+k.PluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd
}

// Run runs kubectl and returns what it printed on each stream.
func (k Kubectl) Run(stdin string, args ...string) (stdout, stderr string, err error) {
	cmd := k.Command(stdin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
