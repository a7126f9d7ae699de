import subprocess
import sys

from agentic_verl.cli import COMMAND_MODULES, build_parser, main


def test_help_lists_every_subcommand():
    proc = subprocess.run([sys.executable, "-m", "agentic_verl.cli", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    subcommands = build_parser()._subparsers._group_actions[0].choices
    assert len(subcommands) >= len(COMMAND_MODULES)
    for name in subcommands:
        assert name in proc.stdout


def test_no_subcommand_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: agentic-verl" in capsys.readouterr().out
