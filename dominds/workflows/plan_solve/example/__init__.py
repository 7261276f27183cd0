"""The data-to-slides example: sample CSV, scripted answers for it, and an offline workspace to run it in."""
