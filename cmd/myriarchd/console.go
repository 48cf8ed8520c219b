package main

import (
	"fmt"
	"io"
	"time"
)

const consoleUsage = `usage: myriarchd console <subcommand> [flags]

subcommands:
  link    print a one-time login link to the browser console (valid 15 minutes)

The console is served on the admin listener at /; logging in also works with
the admin token. Each subcommand prints its flags with --help.
`

func consoleCmd(args []string, stdout, stderr io.Writer) int {
	return subcommand("console", consoleUsage, map[string]func([]string, io.Writer, io.Writer) int{"link": consoleLink}, args, stdout, stderr)
}

func consoleLink(args []string, stdout, stderr io.Writer) int {
	c := newCommand("console link", "console link [flags]",
		"Prints a one-time login link to the console; the secret is in the URL's fragment, which browsers never send to a server.")
	client := clientFlags(c.fs)
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	var link struct {
		Path      string    `json:"path"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	cl, ok := c.call(stderr, client, "POST", "/api/v1/console/links", nil, &link)
	if !ok {
		return 1
	}
	fmt.Fprintln(stdout, cl.Base()+link.Path)
	fmt.Fprintf(stderr, "one-time login link, valid until %s\n", link.ExpiresAt.Local().Format(time.RFC3339))
	return 0
}
