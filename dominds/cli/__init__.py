"""Command-line interface (`dominds ...`)."""
