package main

import (
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/retention"
)

// newRetentionCmd is `tally retention`: what is kept, what is stored, and
// what the next retention run would drop (GET /api/v1/storage).
func newRetentionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "What tally keeps and for how long, the tables' size and free space, and what the next retention run would drop",
		Args:  cobra.NoArgs,
	}
	return readCmd(cmd, func([]string) (string, url.Values) { return "/api/v1/storage", nil }, printStorage)
}

// printStorage writes a storage report: the retention policy, the disks
// and tables, the last retention run and what the next would drop, and
// the parts the engine set aside.
func printStorage(w io.Writer, rep retention.StorageReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if p := rep.Retention; p != nil {
		fmt.Fprintf(tw, "Kept: spans %s, content %s, rollups %s\n", p.Spans, p.Content, p.Rollups)
		for _, name := range slices.Sorted(maps.Keys(p.Projects)) {
			o := p.Projects[name]
			fmt.Fprintf(tw, "  project %s: spans %s, content %s\n", name, o.Spans, o.Content)
		}
	}
	if d := rep.Disk; d != nil {
		state := "taking writes"
		if d.Low {
			state = "REFUSING WRITES: " + d.Error
		}
		fmt.Fprintf(tw, "Disk floor %s: %s\n", d.Floor, state)
		for _, disk := range d.Disks {
			fmt.Fprintf(tw, "  %s\t%s free of %s\tfloor %s\n", disk.Name, fmtBytes(disk.Free), fmtBytes(disk.Total), fmtBytes(disk.Floor))
		}
		if len(d.Tables) > 0 {
			fmt.Fprintln(tw, "TABLE\tON DISK\tROWS")
			for _, t := range d.Tables {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Table, fmtBytes(t.Bytes), fmtTokens(t.Rows))
			}
		}
	}
	if last := rep.LastRun; last != nil {
		fmt.Fprintf(tw, "Last run %s: %d partitions dropped, %s rows deleted%s\n", last.At.Local().Format(time.DateTime), last.Dropped,
			fmtTokens(last.Deleted), errSuffix(last.Error))
	}
	if next := rep.NextRun; next != nil {
		if len(next.Actions) == 0 {
			fmt.Fprintln(tw, "Next run: nothing to drop")
		} else {
			fmt.Fprintln(tw, "NEXT RUN\tTABLE\tWHAT\tROWS\tON DISK")
			for _, a := range next.Actions {
				what := "partition " + a.Partition
				if a.Kind == "delete" {
					who := strings.Join(a.Projects, ", ")
					if a.Except {
						who = "every project"
						if len(a.Projects) > 0 {
							who += " but " + strings.Join(a.Projects, ", ")
						}
					}
					what = "rows before " + a.Before.UTC().Format(time.DateTime) + " of " + who
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Kind, a.Table, what, fmtTokens(a.Rows), fmtBytes(a.Bytes))
			}
		}
	}
	if len(rep.DetachedParts) > 0 {
		fmt.Fprintf(tw, "\n%d parts set aside by the engine, their rows not read (see docs/operations.md: a damaged part):\n", len(rep.DetachedParts))
		fmt.Fprintln(tw, "TABLE\tPART\tPARTITION\tREASON")
		for _, p := range rep.DetachedParts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Table, p.Name, p.PartitionID, p.Reason)
		}
	}
	return tw.Flush()
}

// errSuffix writes a run's error after its figures.
func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (failed: " + e + ")"
}

// fmtBytes writes a size in binary units: 512 B, 1.5 KiB, 3.2 GiB.
func fmtBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	for v /= unit; v >= unit && i < len(units)-1; i++ {
		v /= unit
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
