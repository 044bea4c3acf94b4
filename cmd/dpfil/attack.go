package main

import "github.com/spf13/cobra"

// newAttackCmd is the 'attack' command group; its issue is still open.
func newAttackCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "attack",
		Short: "Reconstruction attacks on DP-SGD vs the ReRo bound (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("attack")
		},
	}
}
