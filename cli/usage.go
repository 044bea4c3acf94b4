package cli

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dpfil/dpfil/internal/suggest"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// setVersionFlag gives root a --version flag that prints what 'dpfil version' prints.
func setVersionFlag(root *cobra.Command) {
	bi := train.DescribeBinary()
	var b bytes.Buffer
	bi.WriteText(&b)
	root.Version = bi.Version
	root.SetVersionTemplate(strings.ReplaceAll(b.String(), "{{", "{{`{{`}}"))
}

// checkUnknownSubcommands makes every command group below root (a command with
// subcommands) refuse an unknown subcommand with cobra's suggestions (its
// SuggestionsMinimumDistance and prefixes) instead of printing its help and exiting
// 0; without arguments a group prints its help. A command without subcommands that
// takes no arguments says so for a stray one (explainExtraArgs).
func checkUnknownSubcommands(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if !c.HasSubCommands() {
			explainExtraArgs(c)
			return
		}
		if c == root {
			return
		}
		c.SuggestionsMinimumDistance = root.SuggestionsMinimumDistance
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return fmt.Errorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), didYouMean(cmd.SuggestionsFor(args[0]), ""))
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	walk(root)
}

// explainExtraArgs rewords cobra's "unknown command X for dpfil train", which a
// command that takes no arguments gives for a stray argument, to say so.
func explainExtraArgs(c *cobra.Command) {
	orig := c.Args
	if orig == nil {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		err := orig(cmd, args)
		if err != nil && strings.HasPrefix(err.Error(), "unknown command") && len(args) > 0 {
			return fmt.Errorf("%q takes no arguments, got %q (a flag's value needs its flag; see '%s --help')", cmd.CommandPath(), args[0], cmd.CommandPath())
		}
		return err
	}
}

// didYouMean is "; did you mean X?" (or "X or Y?") for the suggestions, each with
// prefix, or "" when there are none.
func didYouMean(sugg []string, prefix string) string {
	if len(sugg) == 0 {
		return ""
	}
	if len(sugg) > 3 {
		sugg = sugg[:3]
	}
	for i, s := range sugg {
		sugg[i] = prefix + s
	}
	return "; did you mean " + strings.Join(sugg, " or ") + "?"
}

// flagErrorWithSuggestion adds to pflag's "unknown flag: --X" the command's flags
// nearest to X by edit distance (internal/suggest), and points a positional
// argument a command does not take to its usage.
func flagErrorWithSuggestion(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := didYouMean(suggest.Near(name, names), "--"); s != "" {
		return fmt.Errorf("%s%s", msg, s)
	}
	return fmt.Errorf("%s (see 'dpfil %s --help')", msg, strings.TrimPrefix(cmd.CommandPath(), "dpfil "))
}

// flagGroup is a titled section of a command's flags in its --help.
type flagGroup struct {
	Title string
	Flags []string
}

// setGroupedUsage makes cmd's usage list its flags in groups, groups and flags in
// the given order; a flag in no group is listed under "Other flags".
func setGroupedUsage(cmd *cobra.Command, groups []flagGroup) {
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		w := c.OutOrStderr()
		fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
		if c.HasExample() {
			fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
		}
		for _, g := range groupedFlagSets(c, groups) {
			fmt.Fprintf(w, "\n%s:\n%s", g.title, g.fs.FlagUsages())
		}
		if c.HasAvailableInheritedFlags() {
			fmt.Fprintf(w, "\nGlobal Flags:\n%s", c.InheritedFlags().FlagUsages())
		}
		return nil
	})
}

type titledFlags struct {
	title string
	fs    *pflag.FlagSet
}

// groupedFlagSets splits c's local flags into the groups (names that c lacks are
// skipped) and a last "Other flags" set of those in no group; empty sets are left
// out.
func groupedFlagSets(c *cobra.Command, groups []flagGroup) []titledFlags {
	local := c.LocalFlags()
	used := map[string]bool{}
	var out []titledFlags
	for _, g := range groups {
		fs := pflag.NewFlagSet(g.Title, pflag.ContinueOnError)
		fs.SortFlags = false // in the group's order
		for _, n := range g.Flags {
			if f := local.Lookup(n); f != nil && !used[n] {
				fs.AddFlag(f)
				used[n] = true
			}
		}
		if fs.HasFlags() {
			out = append(out, titledFlags{g.Title, fs})
		}
	}
	other := pflag.NewFlagSet("other", pflag.ContinueOnError)
	local.VisitAll(func(f *pflag.Flag) {
		if !used[f.Name] {
			other.AddFlag(f)
		}
	})
	if other.HasFlags() {
		out = append(out, titledFlags{"Other flags", other})
	}
	return out
}
