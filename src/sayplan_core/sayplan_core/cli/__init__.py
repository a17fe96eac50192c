"""`sayplan` command line: inspect and convert graphs, verify plans, plan paths, run the demo.

Errors are one line on stderr and a non-zero exit; `--json` prints machine-readable output. `app` holds the parser
and the entry point; each `*_commands` module runs a group of subcommands and is imported only when one of them
runs.
"""

from sayplan_core.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
