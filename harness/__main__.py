"""`python -m harness doctor` (alias `env`): the environment report of harness.cli.doctor."""
import sys

from .cli.doctor import main

COMMANDS = ("doctor", "env")

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(f"usage: python -m harness {'|'.join(COMMANDS)} [--no-build]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[2:]))
