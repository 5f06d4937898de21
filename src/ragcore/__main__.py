"""``python -m ragcore``: the command line of ragcore.cli.main."""

from .cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
