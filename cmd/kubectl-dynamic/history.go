package main

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
)

func newHistoryCommand(o *options) *cobra.Command {
	var output *outputFlags
	cmd := &cobra.Command{
		Use:               "history (STATE | dis/NAME | cdis/NAME)",
		ValidArgsFunction: o.completeState,
		Short:             "Show a state's last response changes, newest first: when, the status code, the cause, the body's digest and how the flip reached the followers; and beside them when its followers were pinned and when their pins ended",
		Args:              exactArgs(1, "one STATE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.check(); err != nil {
				return err
			}
			c, ns, kinds, err := o.connectKinds()
			if err != nil {
				return err
			}
			ref, err := o.state(args[0])
			if err != nil {
				return err
			}
			report, err := plugin.HistoryOf(cmd.Context(), c, kinds, o.followersNamespace(ns, ref), ref)
			if err != nil {
				return err
			}
			if output.requested() {
				return output.print(o, report, report.Names())
			}
			return printHistory(o, report)
		},
	}
	output = addOutputFlags(cmd)
	return cmd
}

// printHistory prints the history as a table, newest first, or the one
// line that says there is none.
func printHistory(o *options, r plugin.HistoryReport) error {
	p := &linePrinter{w: o.streams.Out}
	if empty := r.Empty(); empty != "" {
		p.printf("%s\n", empty)
		printNotes(p, r.Notes)
		return p.err
	}
	w := printers.GetNewTabWriter(o.streams.Out)
	t := &linePrinter{w: w}
	columns, rows := r.Table()
	t.printf("%s\n", strings.Join(columns, "\t"))
	for _, row := range rows {
		t.printf("%s\n", strings.Join(row, "\t"))
	}
	if t.err != nil {
		return t.err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	printNotes(p, r.Notes)
	return p.err
}
