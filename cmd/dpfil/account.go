package main

import "github.com/spf13/cobra"

// newAccountCmd is the 'account' command group; its issue is still open.
func newAccountCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "account",
		Short: "Privacy accountants: RDP, FIL, ReRo and MSE bounds (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("account")
		},
	}
}
