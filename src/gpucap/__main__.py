"""`python -m gpucap`: the same as the `gpucap` command."""

from gpucap.cli.main import main

main()
