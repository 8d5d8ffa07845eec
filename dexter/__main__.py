"""``python -m dexter`` runs the CLI."""

from dexter.cli.app import main

main()
