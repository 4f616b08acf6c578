"""`python -m fedbench`: the `fedbench` command."""

from fedbench.cli import main

main()
