package main

import "github.com/spf13/cobra"

// newGLMCmd is the 'glm' command group; its issue is still open.
func newGLMCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "glm",
		Short: "Output-perturbed GLMs: per-example FIL, GLM attack, IRFIL (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("glm")
		},
	}
}
