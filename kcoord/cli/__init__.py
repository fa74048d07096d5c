"""The `kcoord` command: serve, check and report (`main`), groups and wait (`groups`),
broker and partition (`cluster`, `balance`), record (`record`)."""
from kcoord.cli.main import build_parser, config_from_args, main

__all__ = ["build_parser", "config_from_args", "main"]
