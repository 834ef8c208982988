// Command weir is weir's command-line tool.
//
// Usage:
//
//	weir <command> [flags]
//
// Commands:
//
//	check        check a topology's topics against a cluster (the preflight Run runs at start)
//	dev-broker   run an in-process Kafka broker (kfake) until interrupted
//	inspect      print the write-ahead log, epoch log and state stores of a state dir
//	help         print this help, or a command's with `weir help <command>`
//
// Each command lives in a file of its own and is listed in [commands];
// `weir <command> -h` prints its flags. Exit status: 0 on success, 1 when a
// command fails, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand. run gets the arguments after the command's
// name and a ctx cancelled on SIGINT or SIGTERM; it returns errUsage (or an
// error wrapping it) for a usage error.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists every subcommand; add a new one here.
var commands = []command{
	checkCommand,
	devBrokerCommand,
	inspectCommand,
}

// errUsage marks usage errors: exit status 2. The command has already
// printed what was wrong.
var errUsage = errors.New("usage error")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			if c, ok := lookup(rest[0]); ok {
				return exitCode(c.run(ctx, []string{"-h"}, stdout, stdout), stderr)
			}
		}
		usage(stdout)
		return 0
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "weir: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	return exitCode(c.run(ctx, rest, stdout, stderr), stderr)
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(stderr, "weir: %v\n", err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: weir <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-12s %s\n", "help", "print help; `weir help <command>` for a command's flags")
}

// newFlagSet returns a flag set for a subcommand that reports errors
// instead of exiting and prints its usage to w.
func newFlagSet(name, synopsis string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: weir %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, mapping parse failures to errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "weir %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		fs.Usage()
		return errUsage
	}
	return nil
}
