"""`python -m fedbench.cli`: the `fedbench` command."""

from fedbench.cli import main

main()
