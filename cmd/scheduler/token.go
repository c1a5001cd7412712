package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jobscheduler/scheduler/planner/api"
)

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make bearer tokens for the planner's token file (--api-tokens-file)",
	}
	cmd.AddCommand(newTokenNewCommand(), newTokenHashCommand())
	return cmd
}

func newTokenNewCommand() *cobra.Command {
	var entry api.TokenEntry
	cmd := &cobra.Command{
		Use:   "new --name NAME --role reader|writer|operator --scope SCOPE...",
		Short: "Print a new random token and its entry for the token file",
		Long: `Print a new random token (32 random bytes, base64url) and the entry of the
token file that grants it ROLE over each SCOPE. The entry holds the
token's SHA-256, never the token: give the token to its client now, it is
stored nowhere. A scope is *, /subscriptions/{subscription}, optionally
followed by /resourceGroups/{resourceGroup} and /jobCollections/{collection}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token := api.NewToken()
			entry.SHA256 = api.HashToken(token)
			data, err := entry.MarshalEntry()
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Token (give it to its client now; it is stored nowhere):\n  %s\n\nEntry for the token file, under \"tokens:\":\n%s",
				token, indent(string(data), "  "))
			return err
		},
	}
	cmd.Flags().StringVar(&entry.Name, "name", "", "name of the token in the planner's logs")
	cmd.Flags().StringVar(&entry.Role, "role", "", "reader, writer or operator")
	cmd.Flags().StringArrayVar(&entry.Scopes, "scope", nil, "where the role holds (repeat for several); * for everything")
	return cmd
}

func newTokenHashCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "hash < TOKEN",
		Short: "Print the SHA-256 of a token read from stdin, for the sha256 of a token file entry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			token := strings.TrimSpace(line)
			if token == "" {
				return &exitError{code: 2, err: fmt.Errorf("no token on stdin: %v", err)}
			}
			if err := api.CheckToken(token); err != nil {
				return &exitError{code: 2, err: err}
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), api.HashToken(token))
			return err
		},
	}
}

// indent starts every line of text with prefix.
func indent(text, prefix string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}
